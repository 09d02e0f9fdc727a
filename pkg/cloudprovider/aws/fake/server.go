// Package fake is an in-process AWS endpoint for tests: EC2, IAM, SSM, SQS
// and Pricing behind one httptest server, answering the real AWS SDK for Go
// v2 in each service's wire protocol (EC2 ec2Query, IAM awsQuery, SSM and
// Pricing awsJson1_1, SQS awsJson1_0), so the SDK's signing, serialisation,
// error decoding and retries all run. State is in memory; faults
// (throttling, failures, insufficient capacity, a partial fleet, Pricing
// down) are set per test.
//
// A request is routed by the service in its SigV4 credential scope
// (…/us-east-1/ec2/aws4_request) or its X-Amz-Target header; every request,
// retries and faulted ones included, is recorded in Calls.
//
// What it does as AWS does, so a provider's code paths run: EC2 filters
// (tag:, tag-key, wildcards, values ORed, an unknown filter an error) and
// NextToken pages; NotFound errors for unknown IDs; instant fleets that
// launch in the cheapest pool (or the first by priority), with errorSet
// entries for what could not launch; instances pending until the next
// DescribeInstances, shutting-down until the one after TerminateInstances,
// terminated ones described for an hour; subnets that run out of
// addresses; deprecated AMIs hidden unless asked for; IAM's one role per
// instance profile; SQS visibility timeouts on the injected clock (a
// receive never waits); Pricing's PriceList as JSON strings.
package fake

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"k8s.io/utils/clock"
)

// AccountID is the fake account's ID, in ARNs, owner IDs and queue URLs.
const AccountID = "123456789012"

// Options configure a fake.
type Options struct {
	// Region, default us-east-1.
	Region string
	// Clock, default the real one: launch times, SQS visibility timeouts,
	// image deprecation.
	Clock clock.PassiveClock
}

// Call is one request the fake received.
type Call struct {
	// Service as in IAM policies: ec2, iam, ssm, sqs, pricing.
	Service string
	// Action, e.g. CreateFleet.
	Action string
	// Invocation is the SDK's amz-sdk-invocation-id: one per operation the
	// caller invoked, shared by its retries ("" when the header is absent:
	// every request is then its own invocation).
	Invocation string
	// Attempt is this request's attempt of its invocation, from the SDK's
	// amz-sdk-request header (1 when absent).
	Attempt int
	// Error is the error code the fake answered with ("" for an answer).
	Error string
}

// IAMAction is the call as an IAM policy names it, e.g. ec2:CreateFleet.
func (c Call) IAMAction() string { return c.Service + ":" + c.Action }

// AWS is an in-process AWS endpoint: EC2, IAM, SSM, SQS, Pricing. Safe for
// concurrent use.
type AWS struct {
	srv    *httptest.Server
	region string
	clock  clock.PassiveClock

	mu      sync.Mutex
	calls   []Call
	faults  faults
	ec2     ec2State
	iam     iamState
	ssm     map[string]string
	sqs     sqsState
	counter int64
}

// New starts a fake with nothing in it; Standard starts one with a
// realistic account.
func New(opts Options) *AWS {
	f := &AWS{region: opts.Region, clock: opts.Clock, ssm: map[string]string{}}
	if f.region == "" {
		f.region = "us-east-1"
	}
	if f.clock == nil {
		f.clock = clock.RealClock{}
	}
	f.ec2.init()
	f.iam.init()
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	return f
}

// URL is the endpoint every service answers on.
func (f *AWS) URL() string { return f.srv.URL }

// Close stops the server.
func (f *AWS) Close() { f.srv.Close() }

// Region is the fake's region.
func (f *AWS) Region() string { return f.region }

// Config is an SDK configuration for the fake: its region, static
// credentials, BaseEndpoint = URL, and the standard retryer (three
// attempts) without backoff or client-side rate limiting, so throttling
// retries are fast in tests.
func (f *AWS) Config() aws.Config {
	return aws.Config{
		Region:       f.region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake-secret", ""),
		BaseEndpoint: aws.String(f.srv.URL),
		HTTPClient:   f.srv.Client(),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Backoff = noBackoff{}
				o.RateLimiter = ratelimit.None
			})
		},
	}
}

type noBackoff struct{}

func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return time.Millisecond, nil }

// Calls are every request received, in order, retries included: what the
// wire carried, which depends on the SDK's retryer and the transport (a
// kept-alive connection dropped under load is retried). Tests of what the
// code under test decides count Invocations.
func (f *AWS) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Invocations are the operations the caller invoked, in the order of their
// first attempt, one per amz-sdk-invocation-id: retries folded in. Each is
// its last attempt (Attempt says how many the fake saw; Error its answer).
func (f *AWS) Invocations() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	at := map[string]int{}
	for _, c := range f.calls {
		if i, ok := at[c.Invocation]; ok && c.Invocation != "" {
			out[i] = c
			continue
		}
		at[c.Invocation] = len(out)
		out = append(out, c)
	}
	return out
}

// nextID numbers the fake's resources, so IDs are unique and deterministic.
func (f *AWS) nextID() int64 {
	f.counter++
	return f.counter
}

// apiError is an AWS error response.
type apiError struct {
	status        int
	code, message string
	// queryCode is SQS's awsQuery-compatible code (x-amzn-query-error).
	queryCode string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func badRequest(code, format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, code, format, args...)
}

// protocol is how a service's requests and answers are encoded.
type protocol int

const (
	ec2Query protocol = iota
	awsQuery
	awsJSON
)

// service is one AWS service: its protocol and its handlers by action. A
// handler runs with f.mu held and returns the answer to encode (sharing
// nothing of f's state that is ever written) or an error.
type service struct {
	name     string
	protocol protocol
	// target is the X-Amz-Target prefix of a JSON service.
	target       string
	query        map[string]func(f *AWS, q url.Values) (any, error)
	json         map[string]func(f *AWS, body []byte) (any, error)
	jsonVersion  string
	xmlNamespace string
	queryCompat  bool
	// throttle is the service's answer to too many requests.
	throttleCode   string
	throttleStatus int
}

var services = []*service{ec2Service, iamService, ssmService, sqsService, pricingService}

// route finds the service and action of a request.
func route(r *http.Request, body []byte) (*service, string, url.Values, error) {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		prefix, action, _ := strings.Cut(target, ".")
		for _, s := range services {
			if s.target == prefix {
				return s, action, nil, nil
			}
		}
		return nil, "", nil, fmt.Errorf("unknown X-Amz-Target %q", target)
	}
	name := scopeService(r.Header.Get("Authorization"))
	for _, s := range services {
		if s.name == name && s.protocol != awsJSON {
			q, err := url.ParseQuery(string(body))
			if err != nil {
				return nil, "", nil, fmt.Errorf("form body: %w", err)
			}
			return s, q.Get("Action"), q, nil
		}
	}
	return nil, "", nil, fmt.Errorf("no service for credential scope %q", name)
}

// scopeService is the service of a SigV4 Authorization header's credential
// scope: Credential=AKID/20261203/us-east-1/ec2/aws4_request.
func scopeService(auth string) string {
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 {
		return ""
	}
	return parts[3]
}

func (f *AWS) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s, action, q, err := route(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := Call{Service: s.name, Action: action, Invocation: r.Header.Get("Amz-Sdk-Invocation-Id"), Attempt: attempt(r.Header.Get("Amz-Sdk-Request"))}
	out, err := f.handle(s, call, q, body)
	if err != nil {
		writeError(w, s, err)
		return
	}
	var buf bytes.Buffer
	writeAnswer(&buf, w.Header(), s, action, out)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// handle records the call, applies the faults set for it and runs its
// handler.
func (f *AWS) handle(s *service, call Call, q url.Values, body []byte) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.faults.take(s, call); err != nil {
		call.Error = errorCode(err)
		f.calls = append(f.calls, call)
		return nil, err
	}
	out, err := f.run(s, call, q, body)
	if err != nil {
		call.Error = errorCode(err)
	}
	f.calls = append(f.calls, call)
	return out, err
}

// errorCode is the code of an error the fake answers with.
func errorCode(err error) string {
	if e, ok := err.(*apiError); ok {
		return e.code
	}
	return "InternalError"
}

// attempt reads "attempt=2; max=3" (the SDK's amz-sdk-request header).
func attempt(header string) int {
	for _, part := range strings.Split(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "attempt="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 1
}

// run runs the handler of call.
func (f *AWS) run(s *service, call Call, q url.Values, body []byte) (any, error) {
	action := call.Action
	switch s.protocol {
	case awsJSON:
		h, ok := s.json[action]
		if !ok {
			return nil, badRequest("UnknownOperationException", "the fake does not implement %s", call.IAMAction())
		}
		return h(f, body)
	default:
		h, ok := s.query[action]
		if !ok {
			return nil, badRequest("InvalidAction", "the fake does not implement %s", call.IAMAction())
		}
		return h(f, q)
	}
}

func writeAnswer(w io.Writer, h http.Header, s *service, action string, out any) {
	switch s.protocol {
	case ec2Query:
		h.Set("Content-Type", "text/xml;charset=UTF-8")
		writeXML(w, action+"Response", s.xmlNamespace, out)
	case awsQuery:
		h.Set("Content-Type", "text/xml")
		writeXML(w, action+"Response", s.xmlNamespace, queryEnvelope{
			Result:   xmlElement{name: action + "Result", value: out},
			Metadata: responseMetadata{RequestID: "fake-request"},
		})
	case awsJSON:
		h.Set("Content-Type", "application/x-amz-json-"+s.jsonVersion)
		_ = json.NewEncoder(w).Encode(out)
	}
}

func writeError(w http.ResponseWriter, s *service, err error) {
	e, ok := err.(*apiError)
	if !ok {
		e = newError(http.StatusInternalServerError, "InternalError", "%v", err)
	}
	switch s.protocol {
	case ec2Query:
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.WriteHeader(e.status)
		writeXML(w, "Response", "", ec2ErrorResponse{
			Errors:    []ec2Error{{Code: e.code, Message: e.message}},
			RequestID: "fake-request",
		})
	case awsQuery:
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(e.status)
		fault := "Sender"
		if e.status >= 500 {
			fault = "Receiver"
		}
		writeXML(w, "ErrorResponse", s.xmlNamespace, queryErrorResponse{
			Error:     queryError{Type: fault, Code: e.code, Message: e.message},
			RequestID: "fake-request",
		})
	case awsJSON:
		w.Header().Set("Content-Type", "application/x-amz-json-"+s.jsonVersion)
		typ := e.code
		if s.queryCompat {
			typ = "com.amazonaws." + s.name + "#" + e.code
			code, fault := e.queryCode, "Sender"
			if code == "" {
				code = e.code
			}
			if e.status >= 500 {
				fault = "Receiver"
			}
			w.Header().Set("X-Amzn-Query-Error", code+";"+fault)
		}
		w.Header().Set("X-Amzn-ErrorType", typ)
		w.WriteHeader(e.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": e.message})
	}
}

type ec2ErrorResponse struct {
	Errors    []ec2Error `xml:"Errors>Error"`
	RequestID string     `xml:"RequestID"`
}

type ec2Error struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

type queryEnvelope struct {
	Result   xmlElement
	Metadata responseMetadata `xml:"ResponseMetadata"`
}

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

type queryErrorResponse struct {
	Error     queryError `xml:"Error"`
	RequestID string     `xml:"RequestId"`
}

type queryError struct {
	Type    string `xml:"Type"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// xmlElement marshals value as an element named name (an awsQuery
// <ActionResult>, whose name depends on the action).
type xmlElement struct {
	name  string
	value any
}

func (x xmlElement) MarshalXML(e *xml.Encoder, _ xml.StartElement) error {
	start := xml.StartElement{Name: xml.Name{Local: x.name}}
	if x.value == nil {
		if err := e.EncodeToken(start); err != nil {
			return err
		}
		return e.EncodeToken(start.End())
	}
	return e.EncodeElement(x.value, start)
}

func writeXML(w io.Writer, root, namespace string, v any) {
	start := xml.StartElement{Name: xml.Name{Local: root}}
	if namespace != "" {
		start.Attr = []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: namespace}}
	}
	_, _ = io.WriteString(w, xml.Header)
	enc := xml.NewEncoder(w)
	if v == nil {
		v = struct{}{}
	}
	_ = enc.EncodeElement(v, start)
	_ = enc.Flush()
}

// decodeJSON decodes a JSON request body into v.
func decodeJSON(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("SerializationException", "%v", err)
	}
	return nil
}
