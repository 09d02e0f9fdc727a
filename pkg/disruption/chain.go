package disruption

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// Chained consolidation (Policy.ChainsConsolidation: Joiner's decisions).
//
// Upstream's disruption controller makes one command a pass and looks for
// the next only once that one is carried out, each after its own 15 s
// validation: a scale-in that leaves fifty nodes each a little too big
// settles one node every twenty seconds or so while the budget would let
// five go at once. A Joiner pass that makes a consolidation command goes
// on: it computes the pass that would follow once the command is carried
// out — over the cluster as that pass would see it (after) — and takes
// its consolidation command too, and so on while the budgets allow, up to
// MaxChain commands. Each command of the chain is one upstream would make
// in turn; they are validated together (RevalidateAll), each over the
// cluster after the ones before it, and carried out side by side.

// MaxChain bounds the commands one pass chains.
const MaxChain = 10

// chainTimeout bounds the time a controller's pass spends chaining (a
// host bounded by Options.Simulations is bounded by work instead).
const chainTimeout = time.Minute

// chainable: a consolidation command whose simulation is known.
func chainable(cmd *Command) bool {
	return (cmd.Method == MethodMultiNode || cmd.Method == MethodSingleNode) && cmd.sim != nil
}

// chain appends to the pass's decision, when its one command is a
// consolidation, the consolidation commands of the passes after it (see
// above), counting their candidates against the pass's budgets.
func (p *pass) chain() {
	d := p.decision
	if len(d.Commands) != 1 || !chainable(d.Commands[0]) {
		return
	}
	ctx := p.ctx
	if p.opts.Simulations == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, chainTimeout)
		defer cancel()
	}
	cur := p
	for len(d.Commands) < MaxChain && ctx.Err() == nil {
		next := cur.after(d.Commands[len(d.Commands)-1])
		if next == nil {
			return
		}
		q := newPass(ctx, next, p.opts)
		q.expire()
		graceful, eventual := q.eligible()
		q.methods(graceful, eventual)
		if len(q.decision.Commands) != 1 || !chainable(q.decision.Commands[0]) {
			return
		}
		cmd := q.decision.Commands[0]
		d.Commands = append(d.Commands, cmd)
		d.Moves = append(d.Moves, q.decision.Moves...)
		for _, cand := range cmd.Candidates {
			p.remain[cand.NodePool][cmd.Reason]--
		}
		cur = q
	}
}

// podKey names a pod: a remembered simulation holds an earlier pass's pod
// objects.
type podKey struct{ namespace, name string }

func podKeyOf(pod *corev1.Pod) podKey { return podKey{pod.Namespace, pod.Name} }

// after is the cluster as the pass after cmd's execution would see it,
// before anything of it registers: cmd's candidates disrupting, their pods
// where cmd's simulation put them — on the nodes that stay, which having
// just taken pods are settling, and on each replacement, a node in flight
// of its cheapest type in the zone and capacity type it launches in. nil
// when cmd has no simulation, or one that does not match it.
func (p *pass) after(cmd *Command) *Snapshot {
	res := cmd.sim
	if res == nil || len(res.NewNodeClaims) != len(cmd.Replacements) {
		return nil
	}
	going := map[string]bool{}
	for _, cand := range cmd.Candidates {
		going[cand.Node.Name] = true
	}
	moving := map[podKey]bool{}
	for _, cand := range p.c.Nodes {
		if going[cand.Node.Name] {
			for _, pod := range p.podsOf(cand) {
				moving[podKeyOf(pod)] = true
			}
		}
	}
	gained := map[string][]*corev1.Pod{}
	for _, plan := range res.ExistingNodes {
		for _, pod := range plan.Pods {
			if moving[podKeyOf(pod)] {
				gained[plan.Node.Name] = append(gained[plan.Node.Name], pod)
			}
		}
	}
	c := *p.c
	c.Nodes = make([]*Candidate, 0, len(p.c.Nodes)+len(cmd.Replacements))
	for _, cand := range p.c.Nodes {
		switch {
		case going[cand.Node.Name]:
			cp, n := *cand, *cand.Node
			n.Pods, n.Requested, n.Version, n.MarkedForDeletion = nil, nil, "", true
			cp.Node, cp.Disrupting, cp.Reschedulable = &n, true, []*corev1.Pod{}
			c.Nodes = append(c.Nodes, &cp)
		case len(gained[cand.Node.Name]) > 0:
			c.Nodes = append(c.Nodes, took(cand, gained[cand.Node.Name], c.Now))
		default:
			c.Nodes = append(c.Nodes, cand)
		}
	}
	c.Unmanaged = make([]*provisioning.Node, len(p.c.Unmanaged))
	for i, n := range p.c.Unmanaged {
		c.Unmanaged[i] = n
		if pods := gained[n.Name]; len(pods) > 0 {
			c.Unmanaged[i], _ = withPods(n, pods)
		}
	}
	for i, r := range cmd.Replacements {
		var pods []*corev1.Pod
		for _, pod := range res.NewNodeClaims[i].Pods {
			if moving[podKeyOf(pod)] {
				pods = append(pods, pod)
			}
		}
		cand := inFlight(r, pods, c.Now, fmt.Sprintf("chained-%d-%d", len(c.Nodes), i))
		if cand == nil {
			return nil
		}
		c.Nodes = append(c.Nodes, cand)
	}
	return &c
}

// took is the candidate once the pods are bound to it: a copy with them
// on its node and its last pod event now.
func took(cand *Candidate, pods []*corev1.Pod, now time.Time) *Candidate {
	cp := *cand
	var moved []*corev1.Pod
	cp.Node, moved = withPods(cand.Node, pods)
	if cand.Reschedulable != nil {
		cp.Reschedulable = append(slices.Clip(cand.Reschedulable), moved...)
	}
	if cand.NodeClaim != nil {
		nc := *cand.NodeClaim
		nc.Status.LastPodEventTime = metav1.NewTime(now)
		cp.NodeClaim = &nc
	}
	return &cp
}

// withPods is a copy of the node with the pods bound to it too (copies,
// naming it), and those copies.
func withPods(node *provisioning.Node, pods []*corev1.Pod) (*provisioning.Node, []*corev1.Pod) {
	n := *node
	moved := make([]*corev1.Pod, len(pods))
	for i, pod := range pods {
		pc := *pod
		pc.Spec.NodeName = n.Name
		moved[i] = &pc
	}
	n.Pods = append(slices.Clip(n.Pods), moved...)
	n.Requested, n.Version = nil, ""
	return &n, moved
}

// inFlight is a replacement plan launched and not registered yet, holding
// the pods: its cheapest type in the cheapest zone and capacity type its
// requirements allow (the zone consolidation pinned it to); nil when none
// is offered.
func inFlight(r *provisioning.NodeClaimPlan, pods []*corev1.Pod, now time.Time, name string) *Candidate {
	if len(r.InstanceTypes) == 0 {
		return nil
	}
	it := r.InstanceTypes[0]
	o := launchOffering(r, it)
	if o == nil {
		return nil
	}
	empty := replacementNode(r, it, o)
	empty.Name = name
	empty.Labels[v1.LabelHostname] = name
	empty.InFlight = true
	n, _ := withPods(empty, pods)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now),
		Labels: map[string]string{v1.LabelNodePool: r.NodePool.Name}}}
	return &Candidate{Node: n, NodeClaim: nc, NodePool: r.NodePool.Name, InstanceType: it.Name, Zone: o.Zone,
		CapacityType: o.CapacityType, Price: o.Price, Reschedulable: n.Pods}
}

// launchOffering is the offering of it a plan launches into: the cheapest
// it may launch into (ties: by zone).
func launchOffering(r *provisioning.NodeClaimPlan, it *cloudprovider.InstanceType) *cloudprovider.Offering {
	for _, o := range cheapestFirst(it) {
		if launches(r, o) {
			return o
		}
	}
	return nil
}

// RevalidateAll checks commands one pass made together (see chain), in
// order, against fresh state: each over the cluster after the ones before
// it that still hold. errs[i] is cmds[i]'s answer, as Revalidate's.
func RevalidateAll(ctx context.Context, cmds []*Command, c *Snapshot, opts Options) []error {
	errs := make([]error, len(cmds))
	for i, cmd := range cmds {
		p, err := revalidate(ctx, cmd, c, opts)
		errs[i] = err
		if err != nil || i == len(cmds)-1 {
			continue
		}
		if next := p.after(cmd); next != nil {
			c = next
		}
	}
	return errs
}
