package plan

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// Buffers resolves the CapacityBuffers, sorted by namespace and name.
func (o *Objects) Buffers() []buffer.Resolved {
	lookup := o.BufferLookup
	if lookup == nil {
		lookup = o.manifestLookup
	}
	out := make([]buffer.Resolved, 0, len(o.CapacityBuffers))
	for _, cb := range o.CapacityBuffers {
		out = append(out, buffer.Resolve(cb, lookup))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Buffer, out[j].Buffer
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out
}

// BufferNotes say, of each buffer that holds nothing, why.
func (o *Objects) BufferNotes() []string {
	var notes []string
	for _, r := range o.Buffers() {
		if r.Template == nil {
			notes = append(notes, fmt.Sprintf("CapacityBuffer %s/%s holds nothing: %s (%s)", r.Buffer.Namespace, r.Buffer.Name, r.Ready.Reason, r.Ready.Message))
		}
	}
	return notes
}

// addTarget keeps a PodTemplate's or a workload's pod template from the
// manifests, for the buffers that name it.
func (o *Objects) addTarget(d *manifest.Document) error {
	switch d.APIVersion + "/" + d.Kind {
	case "v1/PodTemplate", "apps/v1/Deployment", "apps/v1/StatefulSet":
	default:
		return nil
	}
	obj, ps := manifest.DecodeBuiltin(d)
	if len(ps) > 0 {
		return ps
	}
	t, ok := buffer.TargetOf(obj)
	if !ok {
		return nil
	}
	if o.targets == nil {
		o.targets = map[string]*buffer.Target{}
	}
	o.targets[d.Kind+"/"+podutil.Namespace(metav1.ObjectMeta{Namespace: d.Namespace})+"/"+d.Name] = t
	return nil
}

// manifestLookup finds what a buffer names among the manifests.
func (o *Objects) manifestLookup(kind, namespace, name string) (*buffer.Target, error) {
	if t := o.targets[kind+"/"+namespace+"/"+name]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%s %s/%s is not in the manifests: %w", kind, namespace, name, buffer.ErrNotFound)
}
