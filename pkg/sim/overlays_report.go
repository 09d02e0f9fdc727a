package sim

import (
	"fmt"
	"io"
	"sort"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
)

// OverlayReport is what one NodeOverlay did in the run.
type OverlayReport struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight"`
	// Applied is false when the overlay was refused: Reason (Conflict,
	// RuntimeValidation) and Message say why, as its ValidationSucceeded
	// condition would in a cluster.
	Applied bool   `json:"applied"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// InstanceTypes counts the (NodePool, instance type) pairs whose price
	// or capacity it set (where a higher weight did not).
	InstanceTypes int `json:"instanceTypes"`
	// NodesLaunched counts the nodes launched on such a pair.
	NodesLaunched int `json:"nodesLaunched"`
}

// overlays records what the NodeOverlays did to the pools' instance types.
func (r *recorder) overlays(res *overlay.Result) {
	if res == nil {
		return
	}
	r.overlayResult = res
	weights := map[string]int32{}
	for _, o := range r.e.in.NodeOverlays {
		weights[o.Name] = o.WeightOf()
	}
	r.overlayByName = map[string]*OverlayReport{}
	for _, s := range res.Statuses {
		or := &OverlayReport{Name: s.Name, Weight: weights[s.Name], Applied: s.Valid, Reason: s.Reason, Message: s.Message}
		r.overlayByName[s.Name] = or
		r.overlayList = append(r.overlayList, or)
	}
	for _, byType := range res.Changes {
		for _, ch := range byType {
			for _, name := range ch.Overlays() {
				r.overlayByName[name].InstanceTypes++
			}
		}
	}
}

// overlayLaunch counts a node launched on an overlaid instance type.
func (r *recorder) overlayLaunch(n *simNode) {
	if r.overlayResult == nil {
		return
	}
	if ch := r.overlayResult.Changes[n.pool.Name][n.it.Name]; ch != nil {
		for _, name := range ch.Overlays() {
			r.overlayByName[name].NodesLaunched++
		}
	}
}

func (r *recorder) overlayReports() []OverlayReport {
	out := make([]OverlayReport, 0, len(r.overlayList))
	for _, o := range r.overlayList {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func writeOverlays(w io.Writer, os []OverlayReport) {
	for i, o := range os {
		label := "               "
		if i == 0 {
			label = "NodeOverlays   "
		}
		if !o.Applied {
			fmt.Fprintf(w, "%s%s (weight %d): refused, %s: %s\n", label, o.Name, o.Weight, o.Reason, o.Message)
			continue
		}
		fmt.Fprintf(w, "%s%s (weight %d): %d instance types, %d nodes launched on them\n", label, o.Name, o.Weight, o.InstanceTypes, o.NodesLaunched)
	}
	if len(os) > 0 {
		fmt.Fprintln(w, "               (prices in this report are as the overlays set them)")
	}
}
