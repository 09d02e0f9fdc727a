package fake

import (
	"fmt"
	"net/http"
	"strings"
)

var ssmService = &service{
	name:           "ssm",
	protocol:       awsJSON,
	target:         "AmazonSSM",
	jsonVersion:    "1.1",
	throttleCode:   "ThrottlingException",
	throttleStatus: http.StatusBadRequest,
	json: map[string]func(*AWS, []byte) (any, error){
		"GetParameter":  (*AWS).getParameter,
		"GetParameters": (*AWS).getParameters,
	},
}

// SetParameter sets an SSM parameter (a String; aws:ec2:image data when
// the value is an AMI ID).
func (f *AWS) SetParameter(name, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ssm[name] = value
}

type ssmParameter struct {
	Name             string
	Type             string
	Value            string
	Version          int64
	LastModifiedDate float64
	ARN              string
	DataType         string
}

func (f *AWS) parameter(name string) (ssmParameter, bool) {
	v, ok := f.ssm[name]
	if !ok {
		return ssmParameter{}, false
	}
	dataType := "text"
	if strings.HasPrefix(v, "ami-") {
		dataType = "aws:ec2:image"
	}
	return ssmParameter{
		Name: name, Type: "String", Value: v, Version: 1, DataType: dataType,
		LastModifiedDate: float64(f.clock.Now().Unix()),
		ARN:              fmt.Sprintf("arn:aws:ssm:%s::parameter%s", f.region, name),
	}, true
}

type getParameterInput struct{ Name string }

type getParameterOutput struct{ Parameter ssmParameter }

func (f *AWS) getParameter(body []byte) (any, error) {
	var in getParameterInput
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	p, ok := f.parameter(in.Name)
	if !ok {
		return nil, badRequest("ParameterNotFound", "Parameter %s not found.", in.Name)
	}
	return getParameterOutput{Parameter: p}, nil
}

type getParametersInput struct{ Names []string }

type getParametersOutput struct {
	Parameters        []ssmParameter
	InvalidParameters []string
}

func (f *AWS) getParameters(body []byte) (any, error) {
	var in getParametersInput
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	if len(in.Names) > 10 {
		return nil, badRequest("ValidationException", "1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length less than or equal to 10")
	}
	out := getParametersOutput{Parameters: []ssmParameter{}, InvalidParameters: []string{}}
	for _, n := range in.Names {
		if p, ok := f.parameter(n); ok {
			out.Parameters = append(out.Parameters, p)
		} else {
			out.InvalidParameters = append(out.InvalidParameters, n)
		}
	}
	return out, nil
}
