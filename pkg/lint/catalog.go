package lint

import (
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// catalogTypes are the embedded EC2 catalog's instance types as a pool's
// requirements select them.
type catalogTypes struct {
	types []catalogType
	// defined are the label keys some type sets: a pool requiring one of
	// them selects only the types that set it.
	defined map[string]bool
}

type catalogType struct {
	name        string
	reqs        scheduling.Requirements
	accelerated bool // GPUs or other accelerators (Inferentia, Trainium, …)
	it          *cloudprovider.InstanceType
}

func loadCatalogTypes() (*catalogTypes, error) {
	c, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	its, _, err := c.InstanceTypes(catalog.Options{})
	if err != nil {
		return nil, err
	}
	ct := &catalogTypes{defined: map[string]bool{}}
	for i, it := range its {
		e := c.Entries[i]
		ct.types = append(ct.types, catalogType{it.Name, it.Requirements, e.GPUs > 0 || e.Accelerators > 0, it})
		for _, k := range it.Requirements.Keys() {
			ct.defined[k] = true
		}
	}
	return ct, nil
}

// matching returns the types that can satisfy reqs.
func (ct *catalogTypes) matching(reqs scheduling.Requirements) []catalogType {
	var out []catalogType
	for _, t := range ct.types {
		if t.reqs.Compatible(reqs, func(k string) bool { return !ct.defined[k] }) == nil {
			out = append(out, t)
		}
	}
	return out
}
