package plan

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// NodePoolExplanation is a NodePool's disruption allowance and capacity now.
type NodePoolExplanation struct {
	NodePool string    `json:"nodePool"`
	At       time.Time `json:"at"`
	// Ignored are the input's objects of kinds not modelled (omitted when
	// none), as in every explanation.
	Ignored []manifest.Ignored `json:"ignored,omitempty"`
	// Nodes of the pool; Initialized of them count toward budget
	// percentages, Disrupting (being deleted, or not Ready) against them.
	Nodes       int `json:"nodes"`
	Initialized int `json:"initialized"`
	Disrupting  int `json:"disrupting"`
	// DisruptingNodes names them.
	DisruptingNodes []string `json:"disruptingNodes"`
	// Allowed disruptions by reason now, with the binding budget.
	Allowed []Budget `json:"allowed"`
	// Windows of the budgets with a schedule: open now or not, and when
	// that changes.
	Windows []Window `json:"windows"`
	// Usage against spec.limits, per resource the limits name.
	Usage []Usage `json:"usage"`
	// NodeOverlays that change the price or capacity of some of the
	// pool's instance types, with how many, and those refused.
	NodeOverlays []NodeOverlay `json:"nodeOverlays,omitempty"`
}

// Window is one scheduled budget's window.
type Window struct {
	Budget string    `json:"budget"`
	Open   bool      `json:"open"`
	Next   time.Time `json:"next"`
}

// Usage is a resource the pool's nodes hold against its limit.
type Usage struct {
	Resource string `json:"resource"`
	Used     string `json:"used"`
	Limit    string `json:"limit"`
	// AtLimit: no new node of the pool may launch.
	AtLimit bool `json:"atLimit"`
}

// ExplainNodePool explains the named NodePool at now.
// Its complexity is the sections of the explanation (budgets and
// their windows, limits, nodes, drift, consolidation) filled in order.
func ExplainNodePool(c *state.Objects, name string, now time.Time, policy provisioning.Policy) (*NodePoolExplanation, error) {
	var np *v1.NodePool
	var names []string
	for _, p := range c.NodePools {
		names = append(names, p.Name)
		if p.Name == name {
			np = p
		}
	}
	if np == nil {
		return nil, fmt.Errorf("no NodePool %q here (there are: %v)", name, names)
	}
	out := &NodePoolExplanation{NodePool: name, At: now.UTC(), Allowed: []Budget{}, Windows: []Window{}, Usage: []Usage{}, DisruptingNodes: []string{}}
	if _, res := applyOverlays(c, policy); res != nil {
		count := map[string]int{}
		for _, ch := range res.Changes[name] {
			for _, o := range ch.Overlays() {
				count[o]++
			}
		}
		for _, s := range res.Statuses {
			if !s.Valid {
				out.NodeOverlays = append(out.NodeOverlays, NodeOverlay{Name: s.Name, Reason: s.Reason, Message: s.Message})
			} else if count[s.Name] > 0 {
				out.NodeOverlays = append(out.NodeOverlays, NodeOverlay{Name: s.Name, Applied: true, InstanceTypes: count[s.Name]})
			}
		}
	}
	used := corev1.ResourceList{}
	for _, n := range c.StateNodes() {
		if n.NodePool() != name {
			continue
		}
		out.Nodes++
		for k, q := range n.Capacity() {
			sum := used[k]
			sum.Add(q)
			used[k] = sum
		}
		if !n.Initialized() {
			continue
		}
		out.Initialized++
		if n.Disrupting() || !n.Ready() {
			out.Disrupting++
			out.DisruptingNodes = append(out.DisruptingNodes, n.Name())
		}
	}
	for _, a := range disruption.AllowedByReason(np, disruption.PoolNodes{Total: out.Initialized, Disrupting: out.Disrupting}, now) {
		out.Allowed = append(out.Allowed, budgetOf(np, a, now))
	}
	for i := range np.Spec.Disruption.Budgets {
		budget := &np.Spec.Disruption.Budgets[i]
		if budget.Schedule == nil {
			continue
		}
		open, next, err := disruption.Window(budget, now)
		if err != nil {
			continue // said in Allowed
		}
		out.Windows = append(out.Windows, Window{Budget: disruption.DescribeBudget(np, i), Open: open, Next: next.UTC()})
	}
	var keys []string
	for k := range np.Spec.Limits {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		limit := np.Spec.Limits[corev1.ResourceName(k)]
		u := used[corev1.ResourceName(k)]
		if u.IsZero() {
			u = resource.Quantity{Format: limit.Format}
		}
		out.Usage = append(out.Usage, Usage{Resource: k, Used: u.String(), Limit: limit.String(), AtLimit: u.Cmp(limit) >= 0})
	}
	return out, nil
}

// poolNodes counts the pool's nodes as its budgets do.
func poolNodes(c *state.Objects, pool string, now time.Time) disruption.PoolNodes {
	ex, err := ExplainNodePool(c, pool, now, provisioning.Policy{}) // its counts, which no policy changes
	if err != nil {
		return disruption.PoolNodes{}
	}
	return disruption.PoolNodes{Total: ex.Initialized, Disrupting: ex.Disrupting}
}

// NodeExplanation is what each disruption method makes of a node now.
type NodeExplanation struct {
	Node    string             `json:"node"`
	At      time.Time          `json:"at"`
	Methods []Method           `json:"methods"`
	Ignored []manifest.Ignored `json:"ignored,omitempty"`
}

// Method is one method's answer.
type Method struct {
	Method string `json:"method"`
	Acts   bool   `json:"acts"`
	Why    string `json:"why"`
}

// ExplainNode explains the named node at now, through the same checks a
// disruption pass makes under the policy.
func ExplainNode(ctx context.Context, c *state.Objects, name string, now time.Time, policy provisioning.Policy) (*NodeExplanation, error) {
	c, _ = applyOverlays(c, policy)
	dc := decide.New(policy, decide.Options{}).Prepare(c.DisruptionSnapshot(now, c.Drifted), 0)
	answers, err := disruption.ExplainNode(ctx, dc, name, disruption.Options{})
	if err != nil {
		return nil, err
	}
	out := &NodeExplanation{Node: name, At: now.UTC(), Methods: []Method{}}
	var np *v1.NodePool
	for _, n := range c.StateNodes() {
		if n.Name() == name {
			for _, p := range c.NodePools {
				if p.Name == n.NodePool() {
					np = p
				}
			}
		}
	}
	for _, a := range answers {
		m := Method{Method: string(a.Method), Acts: a.Acts, Why: a.Why}
		if a.ByBudget != "" && np != nil {
			m.Why += heldDetail(c, np, disruption.Allowed(np, a.ByBudget, poolNodes(c, np.Name, now), now), now)
		}
		if a.Method == disruption.MethodDrift && !a.Acts && c.Drifted == nil {
			m.Why += " (NodePool drift only: without the cloud provider to ask, node-class drift such as a new AMI is not checked)"
		}
		out.Methods = append(out.Methods, m)
	}
	return out, nil
}
