package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// Startup is how long the recorded cluster's nodes took to come up: the
// medians over its NodeClaims of creation → Node registered and Node
// registered → Ready. A replay's simulated cloud takes these, so the pods'
// pending times compare like with like.
type Startup struct {
	Claims         int           `json:"claims"`
	Registration   time.Duration `json:"registration"`
	Initialization time.Duration `json:"initialization"`
}

// claim is a recorded NodeClaim: when it was made and its Node's name.
type claim struct {
	created time.Time
	node    string
	// offering: its instance type, zone and capacity type once launched.
	instanceType, zone, capacityType string
	nodePool                         string
	// deleted: when its deletion was recorded (nil: never).
	deleted *time.Time
}

func (b *builder) claim(name string, raw json.RawMessage, t time.Time, del bool) error {
	var nc v1.NodeClaim
	if err := json.Unmarshal(raw, &nc); err != nil {
		return fmt.Errorf("trace: the NodeClaim %s at %s: %w", name, t.Format(time.RFC3339), err)
	}
	c := b.claims[name]
	if c == nil {
		c = &claim{created: nc.CreationTimestamp.UTC()}
		if c.created.IsZero() {
			c.created = t
		}
		b.claims[name] = c
	}
	if nc.Status.NodeName != "" {
		c.node = nc.Status.NodeName
	}
	if it := nc.Labels[corev1.LabelInstanceTypeStable]; it != "" {
		c.instanceType, c.zone, c.capacityType = it, nc.Labels[corev1.LabelTopologyZone], nc.Labels[v1.LabelCapacityType]
	}
	c.nodePool = nc.Labels[v1.LabelNodePool]
	if del && c.deleted == nil {
		c.deleted = &t
	}
	return nil
}

// seen notes, from a record of the Node at t, when it was first Ready.
func (n *node) seen(obj *corev1.Node, t time.Time) {
	if n.ready != nil {
		return
	}
	for _, c := range obj.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			at := t
			if lt := c.LastTransitionTime; !lt.IsZero() && !lt.Time.Before(n.life.Created) && lt.Time.Before(t) {
				at = lt.UTC()
			}
			n.ready = &at
		}
	}
}

// startup measures the nodes' start-up from the claims whose Node was
// recorded Ready.
func (b *builder) startup() Startup {
	var reg, ini []time.Duration
	for _, c := range b.claims {
		n := b.nodes[c.node]
		if n == nil || n.ready == nil || c.created.Before(b.rec.Start) {
			continue
		}
		reg = append(reg, max(n.life.Created.Sub(c.created), 0))
		ini = append(ini, max(n.ready.Sub(n.life.Created), 0))
	}
	return Startup{Claims: len(reg), Registration: median(reg), Initialization: median(ini)}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// calibrate gives the simulated cloud the recorded start-up, and the
// simulated kube-scheduler the recorded pace, where the scenario did not
// say its own.
func (r *Recording) calibrate(in *scenario.Input) {
	if r.SchedulerPace > 0 && in.Scenario.Spec.KubeScheduler == nil {
		in.Scenario.Spec.KubeScheduler = &scenario.KubeScheduler{PodsPerSecond: math.Round(r.SchedulerPace)}
		in.Notes = append(in.Notes, fmt.Sprintf("kube-scheduler tries %.0f pending pods a second, as the recorded one got through them when it fell behind (its busiest %s)",
			math.Round(r.SchedulerPace), paceWindow))
	}
	s := r.Startup
	f := &in.Scenario.Spec.Faults
	if s.Claims == 0 {
		in.Notes = append(in.Notes, "no NodeClaim of the recording came up while it was recorded: the simulated cloud's default start-up latencies are used")
		return
	}
	if f.LaunchLatency.Mean.Duration != 0 || f.RegistrationLatency.Mean.Duration != 0 || f.InitializationLatency.Mean.Duration != 0 {
		return
	}
	// Launch and registration share the recorded claim → Node time. (The
	// simulated cloud takes at least a second for each step, and a zero
	// mean for its default: a millisecond stands for "at once".)
	at := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: max(d, time.Millisecond)} }
	f.LaunchLatency.Mean, f.RegistrationLatency.Mean = at(s.Registration/2), at(s.Registration/2)
	f.InitializationLatency.Mean = at(s.Initialization)
	in.Notes = append(in.Notes, fmt.Sprintf("the simulated nodes come up as the recorded ones did (medians of %d NodeClaims): %s from NodeClaim to Node, %s from Node to Ready",
		s.Claims, s.Registration.Round(100*time.Millisecond), s.Initialization.Round(100*time.Millisecond)))
}

// paceWindow is the span over which the recorded kube-scheduler's pace is
// counted.
const paceWindow = 5 * time.Second

// schedulerPace is the recorded kube-scheduler's pace when it was behind:
// the most pods it first bound or marked unschedulable in one paceWindow
// through the whole of which some pod waited for its first try (created
// at or before the window's start, tried at or after its end), a second.
// 0 when it never fell behind so long, or no pod was ever marked. A pod
// created just before a window's end and tried just after it is no
// backlog: the window's count is then the pods there were, not the pace
// (a 12-pod scale-out on a loaded machine read as 2 pods a second, and
// its replay split the batch over six nodes where the run had two). (Not
// the median: on a shared machine the recorded scheduler also spent whole
// windows trying again pods it had marked, which the simulated one does
// for free.)
func (b *builder) schedulerPace() float64 {
	type attempt struct{ created, first time.Time }
	var attempts []attempt
	marks := false
	for _, p := range b.allPods() {
		marks = marks || p.marked != nil
		if p.daemon || p.created.Before(b.rec.Start) {
			continue
		}
		first := p.bound
		if p.marked != nil && (first == nil || p.marked.Before(*first)) {
			first = p.marked
		}
		if first != nil {
			attempts = append(attempts, attempt{p.created, *first})
		}
	}
	if len(attempts) == 0 || !marks {
		// A recording without one pod marked unschedulable (a simulator's)
		// cannot tell a pod waiting for the scheduler from one waiting
		// for a node.
		return 0
	}
	windows := map[int64]int{}
	for _, a := range attempts {
		windows[int64(a.first.Sub(b.rec.Start)/paceWindow)]++
	}
	// A window was behind when some pod created by its start was first
	// tried at or after its end: the latest first try among the pods
	// created by the start is at or after the end. One sweep over both in
	// time order.
	slices.SortFunc(attempts, func(x, y attempt) int { return x.created.Compare(y.created) })
	ws := slices.Sorted(maps.Keys(windows))
	most, i := 0, 0
	var latest time.Time
	for _, w := range ws {
		start := b.rec.Start.Add(time.Duration(w) * paceWindow)
		end := start.Add(paceWindow)
		for ; i < len(attempts) && !attempts[i].created.After(start); i++ {
			if attempts[i].first.After(latest) {
				latest = attempts[i].first
			}
		}
		if !latest.Before(end) {
			most = max(most, windows[w])
		}
	}
	return float64(most) / paceWindow.Seconds()
}

// interruption is one recorded interruption of an instance.
type interruption struct {
	at            time.Time
	reason, claim string
}

// event takes a recorded interruption Event (trace.InterruptionReasons)
// on a NodeClaim: when it happened — its own time, or when it was recorded
// — if that lies within the recording.
func (b *builder) event(k objKey, raw json.RawMessage, t time.Time) error {
	if b.interruptions[k] != nil {
		return nil
	}
	var ev corev1.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return fmt.Errorf("trace: the Event %s/%s at %s: %w", k.ns, k.name, t.Format(time.RFC3339), err)
	}
	if !trace.IsInterruption(&ev) {
		return nil
	}
	at := t
	for _, when := range []time.Time{ev.EventTime.Time, ev.FirstTimestamp.Time, ev.LastTimestamp.Time, ev.CreationTimestamp.Time} {
		if !when.IsZero() {
			at = when.UTC()
			break
		}
	}
	if at.Before(b.rec.Start) {
		return nil // before the recording: its instance's end is not in it
	}
	b.interruptions[k] = &interruption{at: at, reason: ev.Reason, claim: ev.InvolvedObject.Name}
	return nil
}

// replayedInterruptions are the recorded interruptions, by time, with
// their NodeClaims' offerings; one whose NodeClaim the recording did not
// hold launched is named in the notes.
func (b *builder) replayedInterruptions() []scenario.ReplayInterruption {
	all := slices.Collect(maps.Values(b.interruptions))
	sort.Slice(all, func(i, j int) bool {
		if !all[i].at.Equal(all[j].at) {
			return all[i].at.Before(all[j].at)
		}
		return all[i].claim < all[j].claim
	})
	var out []scenario.ReplayInterruption
	for _, in := range all {
		c := b.claims[in.claim]
		if c == nil || c.instanceType == "" {
			b.rec.Notes = append(b.rec.Notes, fmt.Sprintf("%s: %s of NodeClaim %s is not replayed: the recording does not say what the claim launched",
				in.at.Format(time.RFC3339), in.reason, in.claim))
			continue
		}
		out = append(out, scenario.ReplayInterruption{At: b.offset(in.at), Launched: b.offset(c.created), Reason: in.reason, NodeClaim: in.claim,
			InstanceType: c.instanceType, Zone: c.zone, CapacityType: c.capacityType})
	}
	if len(out) > 0 {
		b.rec.Notes = append(b.rec.Notes, fmt.Sprintf("%d interruptions of instances by the cloud replay at their times, each on the simulated node of its instance's offering launched closest to when it was", len(out)))
	}
	return out
}
