package sim

import (
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// nodeTally is what the recorder sees of one node over its life.
type nodeTally struct {
	podsRan, peakPods int
	byWorkload        map[string]int
	// disrupted: the reason disruption took the node for (Drifted, Empty,
	// …); gone: the reason it was deleted with (Disrupted, Interrupted,
	// Unregistered, Abandoned).
	disrupted, gone string
}

func (r *recorder) tally(n *simNode) *nodeTally {
	t := r.nodes[n]
	if t == nil {
		t = &nodeTally{byWorkload: map[string]int{}}
		r.nodes[n] = t
	}
	return t
}

// boundTo counts a pod of the workload key that started on n, and the
// node's non-DaemonSet pods at that moment (a node's count only rises at a
// bind, so the most seen here is its peak).
func (r *recorder) boundTo(n *simNode, key string) {
	t := r.tally(n)
	t.podsRan++
	t.byWorkload[key]++
	on := 0
	for _, q := range r.e.st.PodsOn(n.name) {
		if !podutil.IsDaemonSetPod(q) {
			on++
		}
	}
	t.peakPods = max(t.peakPods, on)
}

// nodeRecords lists every node launched, by launch time (to the second)
// and name, and the counts per zone, by zone name: every zone the
// NodePools' offerings name, so a zone nothing ran in shows as zeros.
func (r *recorder) nodeRecords() ([]report.NodeRecord, []report.ZoneStats) {
	e := r.e
	nodes := make([]report.NodeRecord, 0, len(e.allNodes))
	zones := map[string]*report.ZoneStats{}
	zone := func(name string) *report.ZoneStats {
		z := zones[name]
		if z == nil {
			z = &report.ZoneStats{Zone: name, LaunchedByPool: map[string]int{}, PodsRanByWorkload: map[string]int{}}
			zones[name] = z
		}
		return z
	}
	for _, its := range e.cloud.InstanceTypes() {
		for _, it := range its {
			for _, o := range it.Offerings {
				zone(o.Zone)
			}
		}
	}
	for _, n := range e.allNodes {
		t := r.nodes[n]
		if t == nil {
			t = &nodeTally{}
		}
		rec := report.NodeRecord{Name: n.name, NodePool: n.pool.Name, InstanceType: n.it.Name, Zone: n.offering.Zone, CapacityType: n.offering.CapacityType,
			Launched: n.launched.Truncate(time.Second), PodsRan: t.podsRan, PeakPods: t.peakPods}
		if len(t.byWorkload) > 0 {
			rec.PodsByWorkload = maps.Clone(t.byWorkload)
		}
		if first := n.segments(e.end)[0].offering; first.Reservation != nil {
			rec.Reservation = first.Reservation.ID
			rec.CapacityType = first.CapacityType // demoted later, if its reservation ended
		}
		if !n.failedAt.IsZero() {
			failed := n.failedAt.Truncate(time.Second)
			rec.Failed = &failed
		}
		if n.state == nodeGone {
			gone := n.gone.Truncate(time.Second)
			rec.Deleted, rec.DeletedReason = &gone, t.gone
			if t.disrupted != "" {
				rec.DeletedReason = t.disrupted
			}
		}
		nodes = append(nodes, rec)
		z := zone(rec.Zone)
		z.Launched++
		z.LaunchedByPool[rec.NodePool]++
		z.PodsRan += t.podsRan
		for k, c := range t.byWorkload {
			z.PodsRanByWorkload[k] += c
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if !a.Launched.Equal(b.Launched) {
			return a.Launched.Before(b.Launched)
		}
		return a.Name < b.Name
	})
	byZone := make([]report.ZoneStats, 0, len(zones))
	for _, k := range slices.Sorted(maps.Keys(zones)) {
		byZone = append(byZone, *zones[k])
	}
	return nodes, byZone
}
