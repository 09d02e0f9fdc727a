// Package plan is one provisioning pass and one disruption pass as a dry
// run: what Joiner would do next to a cluster, and why, from the same
// engine calls the controller makes (through pkg/state). It changes
// nothing.
package plan

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// Plan is what would happen next. Its JSON is deterministic.
type Plan struct {
	At time.Time `json:"at"`
	// Decisions is "karpenter" when the plan makes upstream's choices
	// (empty for Joiner's).
	Decisions string `json:"decisions,omitempty"`
	// NodeClaims provisioning would create.
	NodeClaims []NodeClaim `json:"nodeClaims"`
	// Bindings of pending pods to existing nodes or in-flight claims.
	Bindings []Binding `json:"bindings"`
	// Pending pods that no NodePool can take, with the reason per pool.
	Pending []Pending `json:"pending"`
	// Disruption is the next pass's decision.
	Disruption Disruption `json:"disruption"`
	// Static is what keeps each static NodePool at its replicas, for
	// those not there (omitted when none).
	Static []StaticScaling `json:"static,omitempty"`
	// NodeOverlays say which overlays applied and which were refused
	// (omitted when there are none).
	NodeOverlays []NodeOverlay `json:"nodeOverlays,omitempty"`
	// Ignored are the input's objects of kinds the plan does not model
	// (omitted when none).
	Ignored []manifest.Ignored `json:"ignored,omitempty"`
	// Buffers says where the plan puts each CapacityBuffer's chunks.
	Buffers []Buffer `json:"buffers,omitempty"`
}

// NodeOverlay is what became of one NodeOverlay: applied to so many
// (NodePool, instance type) pairs, or refused and why (as its
// ValidationSucceeded condition says in a cluster).
type NodeOverlay struct {
	Name          string `json:"name"`
	Applied       bool   `json:"applied"`
	InstanceTypes int    `json:"instanceTypes"`
	Reason        string `json:"reason,omitempty"`
	Message       string `json:"message,omitempty"`
}

// StaticScaling is a static NodePool's launches or removals.
type StaticScaling struct {
	NodePool string `json:"nodePool"`
	Replicas int64  `json:"replicas"`
	// Launch so many NodeClaims like NodeClaim.
	Launch    int        `json:"launch,omitempty"`
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`
	// Remove these nodes.
	Remove []string `json:"remove,omitempty"`
	// Held are surplus nodes the NodePool's budgets keep for a later pass
	// (never with decisions karpenter, which bypasses them as upstream);
	// Why says how many go now and which budget holds the rest.
	Held []string `json:"held,omitempty"`
	Why  string   `json:"why,omitempty"`
}

// NodeClaim is one NodeClaim to create.
type NodeClaim struct {
	NodePool string `json:"nodePool"`
	// InstanceTypes it may launch as, cheapest first.
	InstanceTypes []string `json:"instanceTypes"`
	// Zones and CapacityTypes it allows (one each when pinned).
	Zones         []string `json:"zones"`
	CapacityTypes []string `json:"capacityTypes"`
	// PriceUSDPerHour of the cheapest allowed offering.
	PriceUSDPerHour float64  `json:"priceUSDPerHour"`
	Pods            []string `json:"pods"`
	// MinValuesRelaxed: minValues policy BestEffort lowered a minValues.
	MinValuesRelaxed bool `json:"minValuesRelaxed,omitempty"`
	// NodeOverlays changed the price or capacity of some of its instance
	// types.
	NodeOverlays []string `json:"nodeOverlays,omitempty"`
}

// Binding is pending pods that fit a node that exists or is on its way.
type Binding struct {
	Node string   `json:"node"`
	Pods []string `json:"pods"`
}

// Pending is a pod that stays pending.
type Pending struct {
	Pod        string            `json:"pod"`
	Reason     string            `json:"reason"`
	ByNodePool map[string]string `json:"byNodePool,omitempty"`
}

// Disruption is what the disruption pass decides.
type Disruption struct {
	Commands []Command `json:"commands"`
	// Expired nodes are drained regardless of budgets.
	Expired []string `json:"expired"`
	// Blocked nodes and why, sorted by node.
	Blocked []Blocked `json:"blocked"`
	// Allowed disruptions per NodePool and reason now.
	Budgets []Budget `json:"budgets"`
	// PendingNote says how pending pods weigh on the disruption pass ("" when none pend).
	PendingNote string `json:"pendingNote,omitempty"`
	// Leaving are the nodes the rounds to come would take, in order, when
	// a budget held consolidation back (disruption.Decision.Leaving): the
	// controller marks them joiner.sh/consolidating. LeavingNext are
	// those of them the next round takes, which it marks
	// joiner.sh/consolidating-next as well (as it does the commands'
	// nodes while they are validated).
	Leaving     []string `json:"leaving"`
	LeavingNext []string `json:"leavingNext"`
}

// Command is one disruption command.
type Command struct {
	Method       string      `json:"method"`
	Reason       string      `json:"reason"`
	Nodes        []string    `json:"nodes"`
	Replacements []NodeClaim `json:"replacements"`
	// SavingsUSDPerHour: the candidates' price less the replacements'.
	SavingsUSDPerHour float64 `json:"savingsUSDPerHour"`
	// Budget that allows it, per NodePool of its nodes.
	Budget []string `json:"budget"`
}

// Blocked is a node the pass would not disrupt, and why.
type Blocked struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// detail is ": budgets[i] (…), until Mon 17:00 UTC", or "" when no budget
// binds.
func (b Budget) detail() string {
	if b.Budget == "" {
		return ""
	}
	s := ": " + b.Budget
	if b.Until != nil {
		s += ", until " + b.Until.Format("Mon 15:04 MST")
	}
	return s
}

// Budget is how many nodes of a NodePool may be disrupted now for a reason.
type Budget struct {
	NodePool string `json:"nodePool"`
	Reason   string `json:"reason"`
	// Allowed is -1 when no budget limits the reason.
	Allowed int `json:"allowed"`
	// Budget is the binding entry of spec.disruption.budgets, "" for none.
	Budget string `json:"budget"`
	// Until is when the binding budget's window closes (nil when it has
	// no schedule).
	Until *time.Time `json:"until,omitempty"`
}

// Options are a plan's choices.
type Options struct {
	// Policy is provisioning's, disruption's and the NodeOverlays' (see
	// provisioning.Policy).
	Policy provisioning.Policy
}

// Run makes the plan at now.
func Run(ctx context.Context, c *state.Objects, now time.Time, opts Options) *Plan {
	p := &Plan{At: now.UTC(), NodeClaims: []NodeClaim{}, Bindings: []Binding{}, Pending: []Pending{}}
	if opts.Policy.Karpenter() {
		p.Decisions = string(opts.Policy.Decisions)
	}
	c, applied := applyOverlays(c, opts.Policy)
	if applied != nil {
		for _, s := range applied.Statuses {
			p.NodeOverlays = append(p.NodeOverlays, NodeOverlay{Name: s.Name, Applied: s.Valid, InstanceTypes: s.Selected, Reason: s.Reason, Message: s.Message})
		}
	}
	dec := decide.New(opts.Policy, decide.Options{})
	res := dec.Provision(ctx, c.ProvisioningSnapshot(), 0) // one configuration: version 0
	for _, nc := range res.NewNodeClaims {
		out := nodeClaim(nc)
		out.NodeOverlays = applied.Behind(nc.NodePool.Name, nc.InstanceTypes)
		p.NodeClaims = append(p.NodeClaims, out)
	}
	// A buffer's chunks are no pods to bind or to wait: Buffers counts them.
	for _, b := range res.ExistingNodes {
		if pods := slices.DeleteFunc(slices.Clone(b.Pods), buffer.IsVirtual); len(pods) > 0 {
			p.Bindings = append(p.Bindings, Binding{Node: b.Node.Name, Pods: podNames(pods)})
		}
	}
	for _, e := range res.Unschedulable {
		if !buffer.IsVirtual(e.Pod) {
			p.Pending = append(p.Pending, Pending{Pod: podName(e.Pod), Reason: e.Reason, ByNodePool: e.ByNodePool})
		}
	}
	sort.Slice(p.Bindings, func(i, j int) bool { return p.Bindings[i].Node < p.Bindings[j].Node })
	sort.Slice(p.Pending, func(i, j int) bool { return p.Pending[i].Pod < p.Pending[j].Pod })

	if len(c.BufferPods) > 0 {
		// Where this pass put the buffers' chunks: the nodes emptiness
		// leaves alone.
		var byBuffer map[string]buffer.Placement
		cc := *c
		byBuffer, cc.BufferPlacement = buffer.Place(res)
		c = &cc
		for _, name := range slices.Sorted(maps.Keys(byBuffer)) {
			pl := byBuffer[name]
			p.Buffers = append(p.Buffers, Buffer{Name: name, OnExisting: pl.Existing, OnNew: pl.New, Unplaced: pl.Failed})
		}
	}
	dc := dec.Prepare(c.DisruptionSnapshot(now, c.Drifted), 0)
	d := disruption.Compute(ctx, dc, disruption.Options{})
	for _, s := range disruption.StaticScale(dc) {
		out := StaticScaling{NodePool: s.NodePool.Name, Replicas: *s.NodePool.Spec.Replicas, Launch: s.Launch}
		if s.Plan != nil && s.Launch > 0 {
			nc := nodeClaim(s.Plan)
			out.NodeClaim = &nc
		}
		for _, cand := range s.Remove {
			out.Remove = append(out.Remove, cand.Node.Name)
		}
		for _, cand := range s.Held {
			out.Held = append(out.Held, cand.Node.Name)
		}
		out.Why = s.String()
		p.Static = append(p.Static, out)
	}
	p.Disruption = disruptionOf(d, c, now)
	if n := len(dc.Pending); n > 0 {
		p.Disruption.PendingNote = fmt.Sprintf("%d pod(s) pending: every disruption simulation places them too, so no command takes away room they need", n)
	}
	return p
}

// applyOverlays returns a copy of c whose instance types carry its
// NodeOverlays merged as the policy says, and what they did; c itself and
// what its types already carry when they do (nil without overlays).
func applyOverlays(c *state.Objects, policy provisioning.Policy) (*state.Objects, *overlay.Result) {
	if len(c.NodeOverlays) == 0 {
		return c, c.AppliedOverlays
	}
	res := overlay.Apply(c.NodePools, c.InstanceTypes, c.NodeOverlays, policy.OverlayMode())
	cp := *c
	cp.InstanceTypes, cp.NodeOverlays, cp.AppliedOverlays = res.InstanceTypes, nil, res
	return &cp, res
}

func disruptionOf(d *disruption.Decision, c *state.Objects, now time.Time) Disruption {
	pools := c.NodePools
	out := Disruption{Commands: []Command{}, Expired: []string{}, Blocked: []Blocked{}, Budgets: []Budget{}, Leaving: []string{}, LeavingNext: []string{}}
	byName := map[string]*v1.NodePool{}
	for _, np := range pools {
		byName[np.Name] = np
	}
	for _, cmd := range d.Commands {
		c := Command{Method: string(cmd.Method), Reason: string(cmd.Reason), Replacements: []NodeClaim{}, SavingsUSDPerHour: round(cmd.Savings)}
		seen := map[string]bool{}
		for _, cand := range cmd.Candidates {
			c.Nodes = append(c.Nodes, cand.Node.Name)
			if !seen[cand.NodePool] {
				seen[cand.NodePool] = true
				c.Budget = append(c.Budget, budgetText(byName[cand.NodePool], d.Allowances[cand.NodePool], cmd.Reason))
			}
		}
		for _, r := range cmd.Replacements {
			c.Replacements = append(c.Replacements, nodeClaim(r))
		}
		out.Commands = append(out.Commands, c)
	}
	for _, e := range d.Expired {
		out.Expired = append(out.Expired, e.Node.Name)
	}
	marks := d.Marks()
	for _, cand := range d.Leaving {
		out.Leaving = append(out.Leaving, cand.Node.Name)
		if marks[cand.Node.Name] {
			out.LeavingNext = append(out.LeavingNext, cand.Node.Name)
		}
	}
	for _, b := range d.Blocked {
		out.Blocked = append(out.Blocked, Blocked{Node: b.Node, Reason: blockedReason(c, b, byName, d.Allowances, now, len(d.Commands) == 0)})
	}
	sort.SliceStable(out.Blocked, func(i, j int) bool { return out.Blocked[i].Node < out.Blocked[j].Node })
	for _, np := range pools {
		for _, a := range d.Allowances[np.Name] {
			out.Budgets = append(out.Budgets, budgetOf(np, a, now))
		}
	}
	return out
}

// blockedReason says why the pass held a node back. A budget that allowed
// some disruptions at the start of the pass blocked the node only from
// multi-node consolidation, which takes no more nodes at once than the
// budget allows; "allows no more" alone would read as a budget that
// allows none.
func blockedReason(c *state.Objects, b disruption.Blocked, pools map[string]*v1.NodePool, allowances map[string][]disruption.Allowance, now time.Time, noCommand bool) string {
	np := pools[b.NodePool]
	if b.ByBudget == v1.DisruptionReasonUnderutilized && np != nil {
		for _, a := range allowances[b.NodePool] {
			if a.Reason == b.ByBudget && a.Allowed > 0 {
				why := fmt.Sprintf("NodePool %s's budget allows %d %s disruption(s) at once%s, too few to consolidate it together with other nodes",
					np.Name, a.Allowed, a.Reason, budgetOf(np, a, now).detail())
				if noCommand {
					why += fmt.Sprintf("; alone, no consolidation was found for it (joiner explain node %s says why)", b.Node)
				}
				return why
			}
		}
	}
	return b.Reason.String() + budgetDetail(c, b, pools, allowances, now)
}

// budgetDetail says, for a reason that a NodePool's budget holds a node
// back, which budget and until when, and how many nodes it allows of how
// many: ": budgets[1] (nodes 10%, …), until Mon 17:00 UTC, which allows 1
// of the pool's 6 nodes at once: 1 is being disrupted or not Ready".
func budgetDetail(c *state.Objects, b disruption.Blocked, pools map[string]*v1.NodePool, allowances map[string][]disruption.Allowance, now time.Time) string {
	np := pools[b.NodePool]
	if b.ByBudget == "" || np == nil {
		return ""
	}
	for _, a := range allowances[b.NodePool] {
		if a.Reason == b.ByBudget {
			return heldDetail(c, np, a, now)
		}
	}
	return ""
}

// heldDetail is an allowance's detail, with the counts behind an
// allowance of none.
func heldDetail(c *state.Objects, np *v1.NodePool, a disruption.Allowance, now time.Time) string {
	s := budgetOf(np, a, now).detail()
	if a.Allowed != 0 || a.Binding < 0 || a.Err != nil {
		return s
	}
	ex, err := ExplainNodePool(c, np.Name, now, provisioning.Policy{}) // its counts, which no policy changes
	if err != nil {
		return s
	}
	most := disruption.Allowed(np, a.Reason, disruption.PoolNodes{Total: ex.Initialized}, now).Allowed
	switch {
	case ex.Disrupting > 0 && most > 0:
		return s + fmt.Sprintf(", which allows %d of the pool's %d initialized node(s) at once, and %s being disrupted or not Ready",
			most, ex.Initialized, firstOf(ex.DisruptingNodes, 3)+isAre(len(ex.DisruptingNodes)))
	case strings.HasSuffix(np.Spec.Disruption.Budgets[a.Binding].Nodes, "%"):
		return s + fmt.Sprintf(", which allows %d of the pool's %d initialized node(s)", most, ex.Initialized)
	}
	return s
}

func isAre(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

// budgetOf is an allowance as a plan shows it: the binding budget and
// until when its window holds (Allowed -1 when no budget applies).
func budgetOf(np *v1.NodePool, a disruption.Allowance, now time.Time) Budget {
	b := Budget{NodePool: np.Name, Reason: string(a.Reason), Allowed: a.Allowed}
	switch {
	case a.Err != nil:
		b.Budget = "a budget that cannot be read allows none: " + a.Err.Error()
	case a.Binding < 0:
		b.Allowed = -1
	default:
		b.Budget = disruption.DescribeBudget(np, a.Binding)
		if _, next, err := disruption.Window(&np.Spec.Disruption.Budgets[a.Binding], now); err == nil && !next.IsZero() {
			next = next.UTC()
			b.Until = &next
		}
	}
	return b
}

// budgetText says which budget allows a command of the reason in a pool.
func budgetText(np *v1.NodePool, allowances []disruption.Allowance, reason v1.DisruptionReason) string {
	if np == nil {
		return string(reason) + ": the node's NodePool is gone"
	}
	for _, a := range allowances {
		if a.Reason != reason {
			continue
		}
		if a.Binding < 0 {
			return fmt.Sprintf("NodePool %s: no budget limits %s", np.Name, reason)
		}
		return fmt.Sprintf("NodePool %s: %s allows %d %s now", np.Name, disruption.DescribeBudget(np, a.Binding), a.Allowed, reason)
	}
	return fmt.Sprintf("NodePool %s: %s is forceful, not limited by budgets", np.Name, reason)
}

func nodeClaim(nc *provisioning.NodeClaimPlan) NodeClaim {
	out := NodeClaim{NodePool: nc.NodePool.Name, PriceUSDPerHour: round(nc.Price()), Pods: podNames(nc.Pods), MinValuesRelaxed: nc.MinValuesRelaxed,
		Zones: nc.Requirements.Get(v1.LabelZone).Values(), CapacityTypes: nc.Requirements.Get(v1.LabelCapacityType).Values()}
	for _, it := range nc.InstanceTypes {
		out.InstanceTypes = append(out.InstanceTypes, it.Name)
	}
	return out
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, podName(p))
	}
	sort.Strings(out)
	return out
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func round(f float64) float64 { return math.Round(f*10000) / 10000 }

// Buffer is one CapacityBuffer's chunks in the plan: on existing nodes (or
// claims in flight), on the NodeClaims to create, and those nothing holds.
type Buffer struct {
	Name       string `json:"name"`
	OnExisting int    `json:"onExisting"`
	OnNew      int    `json:"onNew"`
	Unplaced   int    `json:"unplaced"`
}
