package disruption

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Method names a way of disrupting nodes.
type Method string

// Methods, in the order they are tried; the first that acts wins the pass.
const (
	MethodEmpty      Method = "empty"
	MethodDrift      Method = "drift"
	MethodMultiNode  Method = "multi-node consolidation"
	MethodSingleNode Method = "single-node consolidation"
)

// Command disrupts candidates, launching replacements first when it has any.
type Command struct {
	Method       Method
	Reason       v1.DisruptionReason
	Candidates   []*Candidate
	Replacements []*provisioning.NodeClaimPlan
	// Savings is the hourly price of the candidates less the replacements'.
	Savings float64
}

func (c *Command) String() string {
	names := make([]string, len(c.Candidates))
	for i, cand := range c.Candidates {
		names[i] = cand.Node.Name
	}
	action := "delete"
	if len(c.Replacements) > 0 {
		action = fmt.Sprintf("replace with %d node(s)", len(c.Replacements))
	}
	return fmt.Sprintf("%s (%s): %s %v, saving %.4f/h", c.Method, c.Reason, action, names, c.Savings)
}

// Blocked names a node that a method wanted but could not take.
type Blocked struct {
	Node   string
	Reason BlockReason
	// ByBudget is set when a NodePool's budget (NodePool) holds the node
	// back for that disruption reason.
	ByBudget v1.DisruptionReason
	NodePool string
}

// Decision is the outcome of one disruption pass.
type Decision struct {
	// Commands of the first method that acted.
	Commands []*Command
	// Expired nodes are deleted regardless of budgets and do-not-disrupt
	// (bounded by terminationGracePeriod during the drain).
	Expired []*Candidate
	// Blocked lists the nodes skipped for blockers or budgets.
	Blocked []Blocked
	// Allowances per NodePool name, one per reason.
	Allowances map[string][]Allowance
	// Moves are the consolidation moves the pass judged (see Move).
	Moves []Move
	// Leaving, when LeavingKnown, are the nodes beyond the Commands' that
	// one multi-node consolidation would also take if the NodePools'
	// budgets allowed: the candidates of the rounds to come (none when
	// the policy does not MarksLeaving). Known when the pass's
	// consolidation ran: a host then marks them with ConsolidatingTaint
	// and takes the mark off every other node; after a pass that did not
	// know, it keeps its marks as they are.
	Leaving      []*Candidate
	LeavingKnown bool
	// Marked, when LeavingKnown, are the nodes a host marks with
	// ConsolidatingTaint (taking the mark off every other node): the
	// Commands' candidates, for the validation's wait, and Leaving (none
	// when the policy does not MarksLeaving).
	Marked []*Candidate
	// Next are the Marked that leave first, which a host marks with
	// ConsolidatingNextTaint as well: the Commands' candidates and, per
	// NodePool, as many of Leaving's first nodes as the Commands take
	// from it (at least one) — the next round's worth when a budget holds
	// the rest back.
	Next []*Candidate
}

// HeldByBudget: the pass left a candidate to a NodePool's budget. A host
// that carries out one of its commands waits for the command's nodes to
// be gone before the next pass, rather than a second: until then they
// hold the budget, and the next pass would take fewer nodes than it
// could a few seconds later.
func (d *Decision) HeldByBudget() bool {
	for _, b := range d.Blocked {
		if b.Reason.Code == BlockBudget {
			return true
		}
	}
	return false
}

// ConsolidatingTaint marks a node that consolidation expects to take in a
// later round, when a NodePool's budget holds it back from this one.
//
// A command's own candidates carry it too while the command waits for its
// validation (15 s): a pod kube-scheduler binds to one of them meanwhile
// — another drain's, most often — cancels the command ("a pod was
// scheduled to node ..."), twelve of eighteen cancellations in a
// 5,000-pod run before they were marked.
//
// A scale-in leaves every node part-empty; consolidation takes a budget's
// worth of them a round, and kube-scheduler's least-allocated scoring puts
// their pods on the emptiest nodes that remain — the next round's
// candidates. Each pod bound there restarts that node's consolidateAfter,
// so each round waits for it: a budget of 10 % took eleven rounds over
// twelve minutes. With the next rounds' nodes marked PreferNoSchedule,
// kube-scheduler's TaintToleration score (weight 3, against 1 for the
// resources it would spread by) places the evicted pods on the nodes that
// stay, and the next round can start once this one is done. The mark is
// only a preference: provisioning and consolidation treat the node as any
// other (kube-scheduler's filter ignores PreferNoSchedule), and a pod that
// fits nowhere else still lands on it.
var ConsolidatingTaint = corev1.Taint{Key: "joiner.sh/consolidating", Effect: corev1.TaintEffectPreferNoSchedule}

// ConsolidatingNextTaint marks, beside ConsolidatingTaint, the marked
// nodes that leave first (Decision.Next). kube-scheduler's TaintToleration
// score counts a node's PreferNoSchedule taints, so a pod that finds no
// room on an unmarked node lands on a node of a later round before one of
// the next round. With a single mark, least-allocated scoring chose the
// emptiest marked node, which is the next round's: at 5,000 pods, 14 of a
// zone's 16 nodes were marked, the zone-spread pods the round before last
// evicted went to the two nodes the last round was to take, their
// consolidateAfter began again, and the scale-in ended 79 s after the
// round before — while eight of the marked nodes stayed to the end.
var ConsolidatingNextTaint = corev1.Taint{Key: "joiner.sh/consolidating-next", Effect: corev1.TaintEffectPreferNoSchedule}

// Marks are the nodes a host marks after a pass that knew its Leaving,
// by Node name: true for those that leave next (Next: both taints),
// false for the rest of Marked (ConsolidatingTaint only). A node not in
// it carries neither.
func (d *Decision) Marks() map[string]bool {
	out := make(map[string]bool, len(d.Marked))
	for _, cand := range d.Marked {
		out[cand.Node.Name] = false
	}
	for _, cand := range d.Next {
		out[cand.Node.Name] = true
	}
	return out
}

// WithMarks is taints with ConsolidatingTaint on a marked node and
// ConsolidatingNextTaint as well on one that leaves next (Decision.Marked
// and Decision.Next), both off otherwise, and whether that changed them:
// what a host writes to each Node after a pass that knew its Leaving.
func WithMarks(taints []corev1.Taint, marked, next bool) ([]corev1.Taint, bool) {
	taints, a := scheduling.WithTaint(taints, ConsolidatingTaint, marked || next)
	taints, b := scheduling.WithTaint(taints, ConsolidatingNextTaint, next)
	return taints, a || b
}

// Options tune consolidation.
type Options struct {
	// SpotToSpot allows replacing spot nodes by a cheaper spot node (a
	// single node only with at least MinSpotToSpotTypes cheaper types to
	// choose from, of which the cheapest MinSpotToSpotTypes are launched).
	SpotToSpot bool
	// SkipConsolidation runs only the empty and drift methods (and
	// expiration): a host that found nothing to consolidate a moment ago
	// can skip the expensive simulations.
	SkipConsolidation bool
	// Simulations, when set, bounds each consolidation method of a pass by
	// work instead of time: at most that many scheduling simulations. A
	// host whose runs must be deterministic sets it; a controller leaves
	// it 0 and the methods stop at upstream's time bounds
	// (MultiNodeTimeout, SingleNodeTimeout), or when ctx ends.
	Simulations int
}

// Upstream's time bounds for one pass of each consolidation method; a
// method that reaches its bound acts on the best it has found.
const (
	MultiNodeTimeout  = time.Minute
	SingleNodeTimeout = 3 * time.Minute
)

// MinSpotToSpotTypes is how many cheaper instance types a spot-to-spot
// replacement needs, so it does not chase the single cheapest pool.
const MinSpotToSpotTypes = 15

func newPass(ctx context.Context, c *Snapshot, opts Options) *pass {
	p := &pass{ctx: ctx, c: c, opts: opts, pools: map[string]*v1.NodePool{}, byPool: map[string][]*Candidate{},
		remain: map[string]map[v1.DisruptionReason]int{}, decision: &Decision{Allowances: map[string][]Allowance{}}}
	for _, np := range c.NodePools {
		p.pools[np.Name] = np
	}
	for _, cand := range c.Nodes {
		p.byPool[cand.NodePool] = append(p.byPool[cand.NodePool], cand)
	}
	for _, np := range c.NodePools {
		all := AllowedByReason(np, budgetNodesOf(p.byPool[np.Name]), c.Now)
		p.decision.Allowances[np.Name] = all
		p.remain[np.Name] = map[v1.DisruptionReason]int{}
		for _, a := range all {
			p.remain[np.Name][a.Reason] = a.Allowed
		}
	}
	return p
}

// podsOf is reschedulable(cand.Node), computed once per pass.
func (p *pass) podsOf(cand *Candidate) []*corev1.Pod {
	if p.pods == nil {
		p.pods = map[*Candidate][]*corev1.Pod{}
	}
	if ps, ok := p.pods[cand]; ok {
		return ps
	}
	ps := cand.Reschedulable
	if ps == nil {
		ps = reschedulable(cand.Node)
	}
	p.pods[cand] = ps
	return ps
}

type pass struct {
	ctx     context.Context
	hashes  map[*v1.NodePool]string // template hash per NodePool, once per pass
	reqs    map[*v1.NodePool]scheduling.Requirements
	reqKeys map[*v1.NodePool]string // reqs' CacheKeys
	// withoutPending: simulations place only the candidates' pods (an
	// interruption's replacement capacity is for its node alone).
	withoutPending bool
	// starting names the managed nodes not initialized yet (nil until a
	// simulation first needs it), once per pass.
	starting map[string]bool
	pods     map[*Candidate][]*corev1.Pod
	planner  *provisioning.Planner
	c        *Snapshot
	opts     Options
	pools    map[string]*v1.NodePool
	byPool   map[string][]*Candidate
	remain   map[string]map[v1.DisruptionReason]int
	decision *Decision
	blocked  map[Blocked]bool // what block has recorded, once each
	// consolidation: the consolidation candidates in order, once made.
	consolidation []*Candidate
	rcost         map[*Candidate]float64 // rescheduleCost, once per candidate
	// candidates are the graceful methods' eligible nodes; poolTotals the
	// Balanced policy's denominators, once per pool (see totals).
	candidates map[*Candidate]bool
	poolTotals map[string]poolTotals
	// binder is kube-scheduler's model for the pass's placement checks
	// (see unplaced): one for the pass, so each node's facts are made once.
	binder *kubescheduler.Binder
	// judged are the moves of the last command consolidateWhy made and
	// judged (nil when it made none): the consolidation methods record
	// them in the Decision as upstream counts them.
	judged []Move
	// batch are the commands single-node consolidation took this pass so
	// far (BatchesSingleNode): later simulations and placement checks see
	// their candidates leaving and their replacements in flight.
	batch []*Command
	// world is the digest of what the pass's simulations share, once
	// made (worldOK: every object had a content key); see simWorld.
	world              [sha256.Size]byte
	worldDone, worldOK bool
}

// block records that a candidate is held back, once per node and reason.
func (p *pass) block(cand *Candidate, reason BlockReason) {
	p.record(Blocked{Node: cand.Node.Name, Reason: reason})
}

func (p *pass) record(b Blocked) {
	if p.blocked == nil {
		p.blocked = map[Blocked]bool{}
	}
	if !p.blocked[b] {
		p.blocked[b] = true
		p.decision.Blocked = append(p.decision.Blocked, b)
	}
}

// budgetBlock is block for a pool's budget under a reason.
func (p *pass) budgetBlock(cand *Candidate, reason v1.DisruptionReason) {
	p.record(Blocked{Node: cand.Node.Name, Reason: BlockReason{Code: BlockBudget, NodePool: cand.NodePool, Budget: reason},
		ByBudget: reason, NodePool: cand.NodePool})
}

// Compute runs one disruption pass over the cluster; it changes nothing it
// is given. Hosts that set each node's Requested spare the simulations
// summing the pods' requests again.
func Compute(ctx context.Context, c *Snapshot, opts Options) *Decision {
	p := newPass(ctx, c, opts)
	p.expire()
	graceful, eventual := p.eligible()
	consolidated := false
	for _, m := range methods {
		if opts.SkipConsolidation && m.consolidation() && m.kind() != MethodEmpty {
			continue
		}
		cands := graceful
		if m.eventual() {
			cands = eventual
		}
		consolidated = consolidated || (m.consolidation() && m.kind() != MethodEmpty)
		if cmds := m.compute(p, cands); len(cmds) > 0 {
			p.decision.Commands = cmds
			break
		}
	}
	// The next round's nodes are found beside the commands themselves
	// (leaving takes them as its first candidates), not beside a batch.
	p.batch = nil
	if consolidated {
		p.decision.LeavingKnown = true
		if c.Policy.MarksLeaving() {
			p.decision.Leaving = p.leaving(graceful)
			for _, cmd := range p.decision.Commands {
				p.decision.Marked = append(p.decision.Marked, cmd.Candidates...)
			}
			p.decision.Marked = append(p.decision.Marked, p.decision.Leaving...)
			p.decision.Next = p.decision.next()
		}
	}
	return p.decision
}

// next is Next: the Commands' candidates, then per NodePool as many of
// Leaving's first nodes as the Commands take from it, at least one.
func (d *Decision) next() []*Candidate {
	round := map[string]int{}
	var next []*Candidate
	for _, cmd := range d.Commands {
		for _, cand := range cmd.Candidates {
			round[cand.NodePool]++
			next = append(next, cand)
		}
	}
	named := map[string]int{}
	for _, cand := range d.Leaving {
		if named[cand.NodePool] < max(1, round[cand.NodePool]) {
			named[cand.NodePool]++
			next = append(next, cand)
		}
	}
	return next
}

// leaving are the consolidation candidates, beyond those of the pass's
// commands, that one multi-node consolidation would take with them if the
// budgets allowed — by the same binary search over the same order, the
// commands' candidates always in it — or, when it takes none with them,
// the node single-node consolidation would delete next (nextSingle). The
// nodes waiting out their consolidateAfter are searched too when the
// commands move pods. None when no budget held a candidate back and none
// waits (the methods took what they could).
func (p *pass) leaving(graceful []*Candidate) []*Candidate {
	taken := map[*Candidate]bool{}
	var first []*Candidate
	for _, cmd := range p.decision.Commands {
		for _, cand := range cmd.Candidates {
			taken[cand] = true
			first = append(first, cand)
		}
	}
	// The nodes an earlier pass marked come first, in the same order, so
	// the rounds to come keep the plan kube-scheduler was told of — even
	// one whose consolidateAfter a pod restarted: the mark is only a
	// preference. Searched afresh from byValue order, the plan changed as
	// every round moved pods, a node it dropped took the next round's
	// pods, and each restarted consolidateAfter (1 min) made a round of
	// its own: at 1,000 pods three nodes of the first plan of eleven were
	// taken minutes later, in a tail of four rounds 80 s apart.
	marked := p.markedCandidates(graceful, taken)
	var rest []*Candidate
	held := false
	for _, cand := range marked {
		rest = append(rest, cand)
		held = held || !p.consolidatable(cand) || p.remain[cand.NodePool][v1.DisruptionReasonUnderutilized] <= 0
	}
	for _, cand := range p.consolidationCandidates(graceful) {
		if !taken[cand] && !slices.Contains(marked, cand) {
			rest = append(rest, cand)
			held = held || p.remain[cand.NodePool][v1.DisruptionReasonUnderutilized] <= 0
		}
	}
	// When the pass moves pods, the nodes still waiting out their
	// consolidateAfter come last: kube-scheduler puts moved pods on the
	// emptiest nodes, which are the next rounds' — unmarked, each took
	// this round's pods, its consolidateAfter began again, and the rounds
	// of the 1,000-pod scale-in's tail came 40 to 70 s apart, not 20.
	if len(first) > 0 {
		for _, cand := range p.waitingCandidates(graceful, taken) {
			if !slices.Contains(marked, cand) {
				rest = append(rest, cand)
				held = true
			}
		}
	}
	if !held {
		return nil
	}
	cands := append(slices.Clip(first), rest...)
	if len(cands) > 100 {
		cands = cands[:100]
	}
	ctx, cancel := context.WithTimeout(p.ctx, MultiNodeTimeout)
	defer cancel()
	judged := p.judged
	defer func() { p.judged = judged }()
	best, _, _ := p.largestPrefix(ctx, cands, max(2, len(first)+1))
	if best == nil {
		if next := p.nextSingle(ctx, rest); next != nil {
			return []*Candidate{next}
		}
		return nil
	}
	return best.Candidates[len(first):]
}

// maxNextSingle bounds the simulations nextSingle runs.
const maxNextSingle = 10

// nextSingle is the first of cands (at most maxNextSingle of them) that
// single-node consolidation would delete once the pass's commands are
// carried out — their nodes gone, their pods moving — or nil: the next
// round's node when no multi-node consolidation takes two. Under a budget
// of one a round takes one node; unmarked, the next round's node took
// this round's pods and restarted its consolidateAfter, and each of the
// 1,000-pod scale-in's last four rounds came 80 s after the one before.
// A node only a replacement would take is not named: in the simulator's
// scale scenario, naming those made the scale-in end four minutes later,
// with three replacements more. It leaves the pass's decision as it was.
func (p *pass) nextSingle(ctx context.Context, cands []*Candidate) *Candidate {
	batch, judged, blocked := p.batch, p.judged, len(p.decision.Blocked)
	p.batch = p.decision.Commands
	defer func() {
		p.batch, p.judged = batch, judged
		for _, b := range p.decision.Blocked[blocked:] {
			delete(p.blocked, b)
		}
		p.decision.Blocked = p.decision.Blocked[:blocked]
	}()
	for i, cand := range cands {
		if i == maxNextSingle || ctx.Err() != nil {
			break
		}
		if cmd := p.consolidate(ctx, []*Candidate{cand}, MethodSingleNode); cmd != nil && len(cmd.Replacements) == 0 {
			return cand
		}
	}
	return nil
}

// markedCandidates are the prospects that carry ConsolidatingTaint.
func (p *pass) markedCandidates(graceful []*Candidate, taken map[*Candidate]bool) []*Candidate {
	return p.prospects(graceful, taken, func(cand *Candidate, _ time.Time) bool {
		return scheduling.HasTaint(cand.Node.Taints, ConsolidatingTaint)
	})
}

// waitingCandidates are the prospects whose consolidateAfter has not
// passed yet.
func (p *pass) waitingCandidates(graceful []*Candidate, taken map[*Candidate]bool) []*Candidate {
	return p.prospects(graceful, taken, func(_ *Candidate, at time.Time) bool { return p.c.Now.Before(at) })
}

// prospects are the graceful candidates, beyond taken, that consolidation
// could take once their consolidateAfter has passed (at: their pool
// consolidates when underutilized, they are not empty) and that keep
// keeps, in byValue order.
func (p *pass) prospects(graceful []*Candidate, taken map[*Candidate]bool, keep func(cand *Candidate, at time.Time) bool) []*Candidate {
	var out []*Candidate
	for _, cand := range graceful {
		if taken[cand] || cand.Node == nil {
			continue
		}
		np := p.pools[cand.NodePool]
		at, ok := consolidatableAt(np, cand)
		if !ok || np.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty || p.isEmpty(cand) || !keep(cand, at) {
			continue
		}
		out = append(out, cand)
	}
	p.byValue(out)
	return out
}

func (p *pass) expire() {
	for _, cand := range p.c.Nodes {
		np := p.pools[cand.NodePool]
		if cand.Disrupting || np == nil || cand.NodeClaim == nil {
			continue
		}
		exp := cand.NodeClaim.Spec.ExpireAfter
		if exp.IsNever() {
			continue
		}
		if !p.c.Now.Before(cand.NodeClaim.CreationTimestamp.Add(*exp.Duration)) {
			p.decision.Expired = append(p.decision.Expired, cand)
		}
	}
}

// eligible are the candidates voluntary methods may consider: initialized,
// not already going, not expiring. Graceful methods (emptiness,
// consolidation) take only those nothing blocks; eventual ones (drift) also
// take a blocked node whose NodeClaim has a terminationGracePeriod, as
// upstream: its drain then ends by that deadline whatever the pods ask.
func (p *pass) eligible() (graceful, eventual []*Candidate) {
	expired := map[*Candidate]bool{}
	for _, e := range p.decision.Expired {
		expired[e] = true
	}
	for _, cand := range p.c.Nodes {
		if !cand.Initialized || cand.Disrupting || expired[cand] || p.pools[cand.NodePool] == nil {
			continue
		}
		if why := p.c.blocker(cand); !why.None() {
			p.block(cand, why)
			if cand.NodeClaim != nil && cand.NodeClaim.Spec.TerminationGracePeriod != nil {
				eventual = append(eventual, cand)
			}
			continue
		}
		graceful = append(graceful, cand)
		eventual = append(eventual, cand)
	}
	p.candidates = make(map[*Candidate]bool, len(graceful))
	for _, cand := range graceful {
		p.candidates[cand] = true
	}
	return graceful, eventual
}

// consolidatable: the pool consolidates, and nothing has been scheduled to
// or removed from the node for consolidateAfter.
func (p *pass) consolidatable(cand *Candidate) bool {
	at, ok := consolidatableAt(p.pools[cand.NodePool], cand)
	return ok && !p.c.Now.Before(at)
}

// consolidatableAt is when the candidate's consolidateAfter has passed
// since a pod was last scheduled to or removed from it (its claim's
// creation if none was); false when its pool never consolidates.
func consolidatableAt(np *v1.NodePool, cand *Candidate) (time.Time, bool) {
	if np == nil || cand.NodeClaim == nil {
		return time.Time{}, false
	}
	after := np.Spec.Disruption.ConsolidateAfter
	if after.IsNever() || np.IsStatic() || after.Duration == nil {
		return time.Time{}, false
	}
	return lastPodEvent(cand.NodeClaim).Add(*after.Duration), true
}

// PodEventDedupe is upstream's dedupeTimeout: a pod event less than this
// after the one a claim records is not recorded, so a node that fills up
// (or empties) over a few seconds counts its consolidateAfter from the
// first of them, and a busy node costs one status write per five seconds.
const PodEventDedupe = 5 * time.Second

// PodEvent is a claim's lastPodEventTime after a pod was bound to its
// node, or went terminating or terminal there, at now: now, unless the
// time recorded is less than PodEventDedupe before it. Every host records
// pod events through it.
func PodEvent(recorded, now time.Time) (time.Time, bool) {
	if !recorded.IsZero() && now.Sub(recorded) < PodEventDedupe {
		return recorded, false
	}
	return now, true
}

// lastPodEvent is when a pod was last scheduled to or removed from the
// claim's node — or, if none was, when it initialized (as upstream: pods
// could start to land then), or was created when that is not known.
func lastPodEvent(nc *v1.NodeClaim) time.Time {
	if t := nc.Status.LastPodEventTime.Time; !t.IsZero() {
		return t
	}
	for _, c := range nc.Status.Conditions {
		if c.Type == v1.ConditionInitialized && c.Status == metav1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return nc.CreationTimestamp.Time
}

// settling: the node is initialized and its NodePool's consolidateAfter
// (set and not zero) has not passed since its last pod event — upstream's
// IsUnderConsolidateAfter. Since v1.14 upstream's consolidation moves no
// pod onto such a node (closedToMoves).
func (p *pass) settling(cand *Candidate) bool {
	np := p.pools[cand.NodePool]
	if np == nil || cand.NodeClaim == nil || !cand.Initialized {
		return false
	}
	after := np.Spec.Disruption.ConsolidateAfter.Duration
	if after == nil || *after <= 0 {
		return false
	}
	return p.c.Now.Before(lastPodEvent(cand.NodeClaim).Add(*after))
}

// closedToMoves: the pods a consolidation moves may not land on the node
// — it is settling and the policy keeps moved pods off settling nodes
// (provisioning.Policy.KeepsMovedPodsOffSettling: upstream's decisions).
func (p *pass) closedToMoves(cand *Candidate) bool {
	return p.c.Policy.KeepsMovedPodsOffSettling() && p.settling(cand)
}

// NextConsolidatable is the first moment after c.Now at which a node not
// consolidatable yet becomes so (upstream's Consolidatable condition turns
// true then, a change of the cluster's state that makes consolidation look
// again); zero when no node is waiting.
func NextConsolidatable(c *Snapshot) time.Time {
	pools := map[string]*v1.NodePool{}
	for _, np := range c.NodePools {
		pools[np.Name] = np
	}
	var next time.Time
	for _, cand := range c.Nodes {
		at, ok := consolidatableAt(pools[cand.NodePool], cand)
		if ok && at.After(c.Now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// take reserves budget for a candidate under a reason, or records it blocked.
func (p *pass) take(cand *Candidate, reason v1.DisruptionReason) bool {
	if p.remain[cand.NodePool][reason] <= 0 {
		p.budgetBlock(cand, reason)
		return false
	}
	p.remain[cand.NodePool][reason]--
	return true
}

// empty deletes the nodes whose pods cost nothing to move (isEmpty), the
// dearest first as upstream orders them, as far as the Empty budgets allow.
func (p *pass) empty(eligible []*Candidate) []*Command {
	var empty []*Candidate
	for _, cand := range eligible {
		if p.isEmpty(cand) && p.consolidatable(cand) && p.c.BufferPods[cand.Node.Name] == 0 {
			empty = append(empty, cand)
		}
	}
	p.byValue(empty)
	cmd := &Command{Method: MethodEmpty, Reason: v1.DisruptionReasonEmpty}
	for _, cand := range empty {
		if p.take(cand, v1.DisruptionReasonEmpty) {
			cmd.Candidates = append(cmd.Candidates, cand)
			cmd.Savings += cand.Price
		}
	}
	if len(cmd.Candidates) == 0 {
		return nil
	}
	return []*Command{cmd}
}

// rescheduleCost is the candidate's rescheduleCost, once per pass.
func (p *pass) rescheduleCost(cand *Candidate) float64 {
	if c, ok := p.rcost[cand]; ok {
		return c
	}
	if p.rcost == nil {
		p.rcost = map[*Candidate]float64{}
	}
	c := rescheduleCost(p.c.Memo, cand, p.podsOf(cand))
	p.rcost[cand] = c
	return c
}

// isEmpty: no pod on the node costs anything to move (see rescheduleCost).
func (p *pass) isEmpty(cand *Candidate) bool {
	return p.rescheduleCost(cand) <= baseDisruptionCost
}

// byValue sorts candidates as upstream's consolidation and emptiness do
// since v1.14: by price over rescheduleCost, the most saved per unit of
// disruption first (ties: dearer, then by name, to stay deterministic).
func (p *pass) byValue(cands []*Candidate) {
	ratio := make(map[*Candidate]float64, len(cands))
	for _, c := range cands {
		ratio[c] = c.Price / p.rescheduleCost(c)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if ratio[a] != ratio[b] {
			return ratio[a] > ratio[b]
		}
		if a.Price != b.Price {
			return a.Price > b.Price
		}
		return a.Node.Name < b.Node.Name
	})
}

// NodePoolHash is the template hash a NodeClaim of the pool is compared with:
// the one the NodePool carries — as upstream's NodePool controller writes
// it, and as a cluster's dump shows it — or, for a NodePool as written in
// a manifest, Joiner's own TemplateHash (which the claims Joiner makes carry).
// Claims whose hash is of another version than the pool's are not compared,
// as upstream re-hashes them instead.
func NodePoolHash(np *v1.NodePool) string {
	if h, ok := np.Annotations[v1.AnnotationNodePoolHash]; ok {
		return h
	}
	return TemplateHash(np)
}

// DriftReason says why a candidate drifted from its NodePool, or "".
func (p *pass) driftReason(cand *Candidate) string {
	np := p.pools[cand.NodePool]
	if cand.NodeClassDrift != "" {
		return "node class: " + string(cand.NodeClassDrift)
	}
	if p.hashes == nil {
		p.hashes, p.reqs, p.reqKeys = map[*v1.NodePool]string{}, map[*v1.NodePool]scheduling.Requirements{}, map[*v1.NodePool]string{}
	}
	hash, ok := p.hashes[np]
	if !ok {
		hash = NodePoolHash(np)
		p.hashes[np] = hash
		p.reqs[np] = requirementsOf(np)
		p.reqKeys[np] = p.reqs[np].CacheKey()
	}
	if h, ok := cand.NodeClaim.Annotations[v1.AnnotationNodePoolHash]; ok && h != hash &&
		cand.NodeClaim.Annotations[v1.AnnotationNodePoolHashVersion] == np.Annotations[v1.AnnotationNodePoolHashVersion] {
		return "the NodePool's template changed"
	}
	if !p.c.Memo.satisfies(cand.Node, p.reqs[np], p.reqKeys[np]) {
		return "the node no longer satisfies the NodePool's requirements"
	}
	its, known := p.c.InstanceTypes[np.Name]
	if !known {
		// The cloud did not answer for this pool (an API error, a
		// NodeClass not ready): nothing is known to be gone, as upstream
		// decides no drift when it cannot get the instance types.
		return ""
	}
	found := false
	for _, it := range its {
		if it.Name == cand.InstanceType {
			found = true
			break
		}
	}
	if !found {
		return "instance type " + cand.InstanceType + " is no longer offered"
	}
	return ""
}

func (p *pass) drift(eligible []*Candidate) []*Command {
	for _, cand := range eligible {
		if p.driftReason(cand) == "" {
			continue
		}
		if np := p.pools[cand.NodePool]; np.IsStatic() {
			if cmd := p.staticDrift(cand, np); cmd != nil {
				return []*Command{cmd}
			}
			continue
		}
		res, ok := p.simulate(p.ctx, []*Candidate{cand})
		if !ok {
			p.decision.Blocked = append(p.decision.Blocked, Blocked{Node: cand.Node.Name, Reason: BlockReason{Code: BlockDriftNowhere}})
			continue
		}
		if !p.take(cand, v1.DisruptionReasonDrifted) {
			continue
		}
		cmd := &Command{Method: MethodDrift, Reason: v1.DisruptionReasonDrifted, Candidates: []*Candidate{cand}, Replacements: res.NewNodeClaims, Savings: cand.Price}
		for _, r := range res.NewNodeClaims {
			cmd.Savings -= r.Price()
		}
		return []*Command{cmd}
	}
	return nil
}

// staticDrift replaces a drifted node of a static NodePool with a node of
// the pool as it is now, as upstream's static drift does: one for one, no
// scheduling simulation (the pool is never launched for pods, and its
// replica count is kept either way).
func (p *pass) staticDrift(cand *Candidate, np *v1.NodePool) *Command {
	r := provisioning.StaticPlan(np, p.c.InstanceTypes[np.Name], p.c.Policy.OverheadDaemonSets(p.c.DaemonSets))
	if r == nil {
		p.decision.Blocked = append(p.decision.Blocked, Blocked{Node: cand.Node.Name, Reason: BlockReason{Code: BlockStaticNoType}})
		return nil
	}
	if !p.take(cand, v1.DisruptionReasonDrifted) {
		return nil
	}
	return &Command{Method: MethodDrift, Reason: v1.DisruptionReasonDrifted, Candidates: []*Candidate{cand},
		Replacements: []*provisioning.NodeClaimPlan{r}, Savings: cand.Price - r.Price()}
}

// consolidationCandidates are sorted by upstream's disruption cost, the
// cheapest to disrupt first (ties: the more expensive node, then by name).
// Multi-node and single-node consolidation ask in turn over the same
// eligible candidates: the list is made once per pass, and callers must not
// modify it.
func (p *pass) consolidationCandidates(eligible []*Candidate) []*Candidate {
	if p.consolidation == nil {
		p.consolidation = p.sortConsolidationCandidates(eligible)
	}
	return p.consolidation
}

// sortConsolidationCandidates keeps the candidates consolidation may take
// — not in a WhenEmpty pool, consolidatable, not empty (emptiness takes
// those, under its own budget) — in byValue order.
func (p *pass) sortConsolidationCandidates(eligible []*Candidate) []*Candidate {
	out := []*Candidate{}
	for _, cand := range eligible {
		np := p.pools[cand.NodePool]
		if np.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty || !p.consolidatable(cand) || p.isEmpty(cand) {
			continue
		}
		out = append(out, cand)
	}
	p.byValue(out)
	return out
}

// budgeted keeps, in order, the candidates their pools' Underutilized
// budgets still allow — counting each taken one against its pool, as
// upstream does before it searches — and records the rest as blocked.
func (p *pass) budgeted(cands []*Candidate) []*Candidate {
	left := map[string]int{}
	for pool, byReason := range p.remain {
		left[pool] = byReason[v1.DisruptionReasonUnderutilized]
	}
	var out []*Candidate
	for _, cand := range cands {
		if left[cand.NodePool] <= 0 {
			p.budgetBlock(cand, v1.DisruptionReasonUnderutilized)
			continue
		}
		left[cand.NodePool]--
		out = append(out, cand)
	}
	return out
}

func (p *pass) singleNode(eligible []*Candidate) []*Command {
	cands := p.consolidationCandidates(eligible)
	// One node at a time: a pool with any budget left may give any one.
	var allowed []*Candidate
	for _, cand := range cands {
		if p.remain[cand.NodePool][v1.DisruptionReasonUnderutilized] > 0 {
			allowed = append(allowed, cand)
		} else {
			p.budgetBlock(cand, v1.DisruptionReasonUnderutilized)
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, SingleNodeTimeout)
	defer cancel()
	done := 0
	for _, cand := range allowed {
		if p.spent(ctx, done) {
			break
		}
		if !p.canPass(cand) {
			continue // not even deleting it would pass its Balanced pool
		}
		if p.remain[cand.NodePool][v1.DisruptionReasonUnderutilized] <= 0 {
			// The batch has used its pool's budget; another pool's
			// nodes may follow.
			p.budgetBlock(cand, v1.DisruptionReasonUnderutilized)
			continue
		}
		done++
		p.judged = nil
		cmd := p.consolidate(ctx, []*Candidate{cand}, MethodSingleNode)
		p.decision.Moves = append(p.decision.Moves, p.judged...)
		if cmd == nil || !p.withinBudget(cmd) {
			continue
		}
		if !p.c.Policy.BatchesSingleNode() {
			return []*Command{cmd}
		}
		p.batch = append(p.batch, cmd)
	}
	return p.batch
}

// batchTaint keeps the pods a batched simulation moves for a command off
// the replacements of the pass's earlier commands (only theirs tolerate
// it: see batched): those are for their own candidates' pods. It exists
// in simulations only.
var batchTaint = corev1.Taint{Key: "joiner.sh/batched-replacement", Effect: corev1.TaintEffectNoSchedule}

// batched is a pod of a batched command as its simulations move it: a
// copy that tolerates batchTaint.
func batched(pod *corev1.Pod) *corev1.Pod {
	cp := *pod
	cp.Spec.Tolerations = append(slices.Clip(pod.Spec.Tolerations), corev1.Toleration{Key: batchTaint.Key, Operator: corev1.TolerationOpExists})
	return &cp
}

// batchNodes are the replacements of the pass's batched commands as
// kube-scheduler will see them: in flight, of their cheapest type, in the
// zone of its cheapest offering the plan allows (the placement check has
// pinned a replacement to one zone already) — for a simulation, in flight
// and tainted with batchTaint (tainted); for kube-scheduler's model, as
// they will be when the candidates are drained: registered (a command
// drains its candidates once its replacements have initialized).
func (p *pass) batchNodes(tainted bool) []*provisioning.Node {
	var out []*provisioning.Node
	for _, cmd := range p.batch {
		for _, r := range cmd.Replacements {
			it := r.InstanceTypes[0]
			var best *cloudprovider.Offering
			for _, o := range it.Offerings {
				if o.Available && r.Requirements.Get(v1.LabelZone).Has(o.Zone) && r.Requirements.Get(v1.LabelCapacityType).Has(o.CapacityType) &&
					(best == nil || o.Price < best.Price || o.Price == best.Price && o.Zone < best.Zone) {
					best = o
				}
			}
			if best == nil {
				continue
			}
			n := replacementNode(r, it, best)
			n.Name = fmt.Sprintf("%s-%d", n.Name, len(out))
			n.Labels[v1.LabelHostname] = n.Name
			if tainted {
				n.InFlight = true
				n.Taints = append(n.Taints, batchTaint)
			}
			out = append(out, n)
		}
	}
	return out
}

// spent: a method that has run done simulations has used up its bound —
// the work budget, or its time (ctx).
func (p *pass) spent(ctx context.Context, done int) bool {
	return ctx.Err() != nil || (p.opts.Simulations > 0 && done >= p.opts.Simulations)
}

// multiNode finds the largest prefix (of at least 2) of the candidates that
// can be consolidated together, by binary search as upstream does, over the
// candidates the budgets allow.
func (p *pass) multiNode(eligible []*Candidate) []*Command {
	cands := p.budgeted(p.consolidationCandidates(eligible))
	if len(cands) > 100 {
		cands = cands[:100]
	}
	ctx, cancel := context.WithTimeout(p.ctx, MultiNodeTimeout)
	defer cancel()
	best, bestMoves, rejected := p.largestPrefix(ctx, cands, 2)
	if best == nil {
		p.decision.Moves = append(p.decision.Moves, rejected...)
		return nil
	}
	if !p.withinBudget(best) {
		return nil
	}
	p.decision.Moves = append(p.decision.Moves, bestMoves...)
	return []*Command{best}
}

// largestPrefix is upstream's binary search for the longest prefix of the
// candidates (of at least least of them) that consolidates together: its command
// and the moves judged for it, or the moves of the last one the Balanced
// policy refused (p.judged is left as the last probe set it).
func (p *pass) largestPrefix(ctx context.Context, cands []*Candidate, least int) (best *Command, bestMoves, rejected []Move) {
	lo, hi := least, len(cands)
	for done := 0; lo <= hi && !p.spent(ctx, done); done++ {
		mid := (lo + hi) / 2
		p.judged = nil
		if cmd := p.consolidate(ctx, cands[:mid], MethodMultiNode); cmd != nil {
			best, bestMoves = cmd, p.judged
			lo = mid + 1
		} else {
			if p.judged != nil { // built, and the Balanced policy said no
				rejected = p.judged
			}
			hi = mid - 1
		}
	}
	return best, bestMoves, rejected
}

func (p *pass) withinBudget(cmd *Command) bool {
	need := map[string]int{}
	for _, cand := range cmd.Candidates {
		need[cand.NodePool]++
	}
	for pool, n := range need {
		if p.remain[pool][v1.DisruptionReasonUnderutilized] < n {
			for _, cand := range cmd.Candidates {
				if cand.NodePool == pool {
					p.budgetBlock(cand, v1.DisruptionReasonUnderutilized)
				}
			}
			return false
		}
	}
	for pool, n := range need {
		p.remain[pool][v1.DisruptionReasonUnderutilized] -= n
	}
	return true
}

// consolidate checks whether the candidates' pods fit on the rest of the
// cluster plus at most one new node that is cheaper than they are.
func (p *pass) consolidate(ctx context.Context, cands []*Candidate, method Method) *Command {
	cmd, _ := p.consolidateWhy(ctx, cands, method)
	return cmd
}

// alsoPending names the pending pods the simulation's new claims would
// also take ("" for none): room consolidation must leave them.
func (p *pass) alsoPending(res *provisioning.Results) string {
	// By name: a remembered simulation holds an earlier pass's pod objects.
	type podName struct{ namespace, name string }
	pending := make(map[podName]bool, len(p.c.Pending))
	for _, pod := range p.c.Pending {
		pending[podName{pod.Namespace, pod.Name}] = true
	}
	n := 0
	for _, nc := range res.NewNodeClaims {
		for _, pod := range nc.Pods {
			if pending[podName{pod.Namespace, pod.Name}] {
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and the %d pending pod(s) that would go with them", n)
}

// consolidateWhy is consolidate, with the reason when it finds no command.
func (p *pass) consolidateWhy(ctx context.Context, cands []*Candidate, method Method) (*Command, string) {
	res, ok := p.simulateConsolidation(ctx, cands)
	switch {
	case !ok:
		return nil, "its pods would not all fit elsewhere: " + podError(res)
	case len(res.NewNodeClaims) > 1:
		return nil, fmt.Sprintf("its pods%s would need %d new nodes; consolidation replaces with at most one", p.alsoPending(res), len(res.NewNodeClaims))
	}
	price := 0.0
	allSpot := true
	for _, cand := range cands {
		price += cand.Price
		allSpot = allSpot && cand.CapacityType == v1.CapacityTypeSpot
	}
	cmd := &Command{Method: method, Reason: v1.DisruptionReasonUnderutilized, Candidates: cands, Savings: price}
	if len(res.NewNodeClaims) == 1 {
		r, why := p.replacement(cands, res, price, allSpot)
		if r == nil {
			return nil, why
		}
		cmd.Replacements = []*provisioning.NodeClaimPlan{r}
		cmd.Savings -= r.InstanceTypes[0].CheapestPrice(r.Requirements)
	}
	if !cheaper(price-cmd.Savings, price) {
		return nil, "no saving"
	}
	if why := p.placed(cands, cmd); why != "" {
		return nil, why
	}
	moves, approved := p.judge(cmd)
	p.judged = moves
	if !approved {
		return nil, rejection(moves)
	}
	return cmd, ""
}

// replacement is the one new claim of a simulation as consolidation
// launches it — narrowed to spot as upstream narrows it, to the types
// cheaper than the candidates (price) and, for several, than each one's
// own type among them, to the cheapest 15 for single-node spot-to-spot —
// or nil with why not.
func (p *pass) replacement(cands []*Candidate, res *provisioning.Results, price float64, allSpot bool) (*provisioning.NodeClaimPlan, string) {
	r := res.NewNodeClaims[0]
	ct := r.Requirements.Get(v1.LabelCapacityType)
	spotToSpot := allSpot && ct.Has(v1.CapacityTypeSpot)
	if ct.Has(v1.CapacityTypeSpot) && (spotToSpot || ct.Has(v1.CapacityTypeOnDemand)) {
		// As upstream: a spot node's replacement is spot; an on-demand
		// node replaced by one that may be spot is priced as spot and
		// launched only as spot, so a spot shortage fails the launch
		// rather than replace the node by a dearer on-demand one.
		spot := *r
		spot.Requirements = r.Requirements.Copy()
		spot.Requirements[v1.LabelCapacityType] = ct.Intersection(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot))
		r = &spot
	}
	limit := sameTypeLimit(cands, r, price)
	var below []*cloudprovider.InstanceType
	for _, it := range r.InstanceTypes {
		if cheaper(it.CheapestPrice(r.Requirements), limit) {
			below = append(below, it)
		}
	}
	if len(below) == 0 {
		cheapest := "none"
		if len(r.InstanceTypes) > 0 {
			cheapest = fmt.Sprintf("%s at %.4f USD/h", r.InstanceTypes[0].Name, r.InstanceTypes[0].CheapestPrice(r.Requirements))
		}
		if limit < price {
			return nil, fmt.Sprintf("no cheaper replacement: the cheapest type that holds its pods%s is %s, and no type cheaper than a candidate's own (%.4f USD/h) does — deleting the others alone would do", p.alsoPending(res), cheapest, limit)
		}
		return nil, fmt.Sprintf("no cheaper replacement: the cheapest type that holds its pods%s is %s, against %.4f USD/h now", p.alsoPending(res), cheapest, price)
	}
	if spotToSpot {
		if why := p.spotToSpotWhyNot(cands, len(below)); !why.None() {
			return nil, why.String()
		}
		if len(cands) == 1 {
			// Launch only the cheapest 15, as upstream: whichever of them
			// EC2 picks, no cheaper set remains to consolidate to at once.
			below = below[:MinSpotToSpotTypes]
		}
	}
	own := *r // r belongs to the (remembered) simulation
	own.InstanceTypes = below
	return &own, ""
}

// sameTypeLimit is what a replacement of cands, priced price together,
// must cost less than: price — and, for more than one candidate, the price
// of any candidate whose own type r may launch (upstream's
// filterOutSameInstanceType): to replace two nodes by one of the type one
// of them is would be to delete the other and move the pods of both; and a
// dearer type in its place is one single-node consolidation replaces by
// that type next.
func sameTypeLimit(cands []*Candidate, r *provisioning.NodeClaimPlan, price float64) float64 {
	limit := price
	if len(cands) < 2 {
		return limit
	}
	own := map[string]float64{}
	for _, cand := range cands {
		if q, ok := own[cand.InstanceType]; !ok || cand.Price < q {
			own[cand.InstanceType] = cand.Price
		}
	}
	for _, it := range r.InstanceTypes {
		if q, ok := own[it.Name]; ok && q < limit && cheaper(it.CheapestPrice(r.Requirements), price) {
			limit = q
		}
	}
	return limit
}

// spotToSpotWhyNot says why spot nodes may not be replaced by a spot node
// with that many cheaper types ("" when they may); a single node's own
// answer is recorded as blocking it.
func (p *pass) spotToSpotWhyNot(cands []*Candidate, cheaper int) BlockReason {
	var why BlockReason
	switch {
	case !p.opts.SpotToSpot:
		why = BlockReason{Code: BlockSpotToSpotOff}
	case len(cands) == 1 && cheaper < MinSpotToSpotTypes:
		why = BlockReason{Code: BlockSpotToSpotTypes, Needed: MinSpotToSpotTypes, Found: cheaper}
	}
	if !why.None() && len(cands) == 1 { // multi-node's probes are not the node's own answer
		p.block(cands[0], why)
	}
	return why
}

// podError is the first pod a simulation could not place, with its reason.
func podError(res *provisioning.Results) string {
	if len(res.Unschedulable) == 0 {
		return "no reason found"
	}
	e := res.Unschedulable[0]
	return e.Pod.Namespace + "/" + e.Pod.Name + ": " + e.Reason
}

// simulateConsolidation is simulate for consolidation: under upstream's
// decisions (since v1.14) the candidates' pods, but pending ones, may not
// land on a node that is settling (closedToMoves).
func (p *pass) simulateConsolidation(ctx context.Context, cands []*Candidate) (*provisioning.Results, bool) {
	return p.simulation(forConsolidation, cands, func() (*provisioning.Results, bool, bool) {
		res, ok := p.solve(ctx, cands, forConsolidation)
		return res, ok, ctx.Err() == nil
	})
}

// simulate reschedules the candidates' pods onto the rest of the cluster
// with the provisioning scheduler; ok is false if any pod has nowhere to go.
//
// As upstream, the pending pods and the pods of nodes already being
// disrupted are placed as well (unless withoutPending), and only the
// candidates' pods must find a place.
//
// The answer is remembered in the cluster's Memo (see simulation): callers
// must not modify it.
func (p *pass) simulate(ctx context.Context, cands []*Candidate) (*provisioning.Results, bool) {
	return p.simulation(forDisruption, cands, func() (*provisioning.Results, bool, bool) {
		res, ok := p.solve(ctx, cands, forDisruption)
		return res, ok, ctx.Err() == nil
	})
}

// solve is simulate's scheduling run, or simulateConsolidation's.
func (p *pass) solve(ctx context.Context, cands []*Candidate, kind simKind) (*provisioning.Results, bool) {
	consolidation := kind == forConsolidation
	removed := map[*Candidate]bool{}
	var pods []*corev1.Pod
	mustPlace := map[*corev1.Pod]bool{}
	var moving map[*corev1.Pod]bool
	if consolidation {
		moving = map[*corev1.Pod]bool{}
	}
	for _, cand := range cands {
		removed[cand] = true
		for _, pod := range p.podsOf(cand) {
			pods = append(pods, pod)
			mustPlace[pod] = true
			if consolidation && pod.Status.Phase != corev1.PodPending {
				moving[pod] = true
			}
		}
	}
	if !p.withoutPending {
		pods = append(pods, p.c.Pending...)
	}
	// The pass's batched commands are carried out already: their
	// candidates' pods go with the others (to their replacements, in
	// flight), and nothing else goes to those candidates.
	others := map[*corev1.Pod]bool{}
	for _, cmd := range p.batch {
		for _, cand := range cmd.Candidates {
			removed[cand] = true
			for _, pod := range p.podsOf(cand) {
				pod = batched(pod)
				pods = append(pods, pod)
				others[pod] = true
				if consolidation && pod.Status.Phase != corev1.PodPending {
					moving[pod] = true
				}
			}
		}
	}
	snap := &provisioning.Snapshot{NodePools: p.c.NodePools, InstanceTypes: p.c.InstanceTypes, DaemonSets: p.c.DaemonSets,
		Policy: p.c.Policy, Volumes: p.c.Volumes, DRA: p.c.DRA, ReservationFallback: true}
	for _, cand := range p.c.Nodes {
		if removed[cand] {
			continue
		}
		node := cand.Node
		if cand.Disrupting && !p.withoutPending {
			pods = append(pods, p.podsOf(cand)...)
		}
		if cand.Disrupting && !node.MarkedForDeletion {
			// Disrupted nodes carry Joiner's taint; nothing new goes there.
			n := *node
			n.MarkedForDeletion = true
			node = &n
		}
		if consolidation && p.closedToMoves(cand) {
			n := *node
			n.Settling = true
			node = &n
		}
		snap.Nodes = append(snap.Nodes, node)
	}
	snap.Moving = moving
	inFlight := p.batchNodes(true)
	snap.Nodes = append(snap.Nodes, inFlight...)
	snap.Nodes = append(snap.Nodes, p.c.Unmanaged...)
	if p.planner == nil {
		p.planner = p.c.Planner
		if p.planner == nil {
			p.planner = provisioning.NewPlanner(p.c.NodePools, p.c.InstanceTypes, p.c.Policy.OverheadDaemonSets(p.c.DaemonSets))
		}
	}
	snap.Pods = pods
	snap.NoClaimCaps = true // it replaces with at most one node: a cap would only split that one
	res := p.planner.Solve(ctx, snap)
	for _, pe := range res.Unschedulable {
		if mustPlace[pe.Pod] {
			return res, false
		}
	}
	if pe := batchMiss(res, others, mustPlace, inFlight); pe != nil {
		out := *res
		out.Unschedulable = append([]*provisioning.PodError{pe}, res.Unschedulable...)
		return &out, false
	}
	if pe := p.onUninitialized(res, mustPlace); pe != nil {
		// A copy: res may be what the Planner or the Memo keeps.
		out := *res
		out.Unschedulable = append([]*provisioning.PodError{pe}, res.Unschedulable...)
		return &out, false
	}
	return res, true
}

// batchMiss is a PodError when a simulation beside the pass's batched
// commands does not hold: a pod of theirs (others) finds no room but on a new
// claim (their replacements in flight were to hold them), or one of the
// candidates' own pods would go to their replacements (capacity that has
// not proven itself, as onUninitialized); nil when it holds.
func batchMiss(res *provisioning.Results, others, mustPlace map[*corev1.Pod]bool, inFlight []*provisioning.Node) *provisioning.PodError {
	if len(others) == 0 {
		return nil
	}
	miss := func(pod *corev1.Pod, why string) *provisioning.PodError {
		return &provisioning.PodError{Pod: pod, Reason: why, ByNodePool: map[string]string{}}
	}
	for _, pe := range res.Unschedulable {
		if others[pe.Pod] {
			return miss(pe.Pod, "a pod of this pass's other consolidations would find no room: "+pe.Reason)
		}
	}
	for _, nc := range res.NewNodeClaims {
		for _, pod := range nc.Pods {
			if others[pod] {
				return miss(pod, "a pod of this pass's other consolidations would need a new node")
			}
		}
	}
	names := make(map[string]bool, len(inFlight))
	for _, n := range inFlight {
		names[n.Name] = true
	}
	for _, plan := range res.ExistingNodes {
		if !names[plan.Node.Name] {
			continue
		}
		for _, pod := range plan.Pods {
			if mustPlace[pod] {
				return miss(pod, "would schedule against "+plan.Node.Name+", the replacement of another consolidation this pass")
			}
		}
	}
	return nil
}

// onUninitialized is a PodError for the first of the candidates' pods the
// simulation put on a managed node that has not initialized yet (an
// in-flight claim, or a node still starting), or nil. As upstream's
// SimulateScheduling, a disruption is not decided on capacity that has
// not proven itself: a node may never come up, and one still starting is
// no place a drained pod can go now. Pending pods and those of nodes
// already being disrupted may go there (they are not the command's).
func (p *pass) onUninitialized(res *provisioning.Results, mustPlace map[*corev1.Pod]bool) *provisioning.PodError {
	if p.starting == nil {
		p.starting = map[string]bool{}
		for _, cand := range p.c.Nodes {
			if !cand.Initialized {
				p.starting[cand.Node.Name] = true
			}
		}
	}
	if len(p.starting) == 0 {
		return nil
	}
	for _, plan := range res.ExistingNodes {
		if !p.starting[plan.Node.Name] {
			continue
		}
		for _, pod := range plan.Pods {
			if mustPlace[pod] {
				why := "would schedule against node " + plan.Node.Name + ", which has not initialized yet"
				return &provisioning.PodError{Pod: pod, Reason: why, ByNodePool: map[string]string{}}
			}
		}
	}
	return nil
}
