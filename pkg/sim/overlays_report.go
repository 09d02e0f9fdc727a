package sim

import (
	"sort"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
)

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
	r.overlayByName = map[string]*report.OverlayReport{}
	for _, s := range res.Statuses {
		or := &report.OverlayReport{Name: s.Name, Weight: weights[s.Name], Applied: s.Valid, Reason: s.Reason, Message: s.Message}
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

func (r *recorder) overlayReports() []report.OverlayReport {
	out := make([]report.OverlayReport, 0, len(r.overlayList))
	for _, o := range r.overlayList {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
