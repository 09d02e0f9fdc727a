// Package kwok is a cloud provider for real API servers without real
// machines: it chooses instance types and offerings as the simulated EC2
// does (from the same catalog), and "launches" an instance by creating the
// Node a kubelet would register, annotated for kwok's controller, which
// makes it Ready and runs its pods.
package kwok

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
)

// AnnotationNode marks the Nodes kwok's controller manages (its default
// manageNodesWithAnnotationSelector).
const AnnotationNode = "kwok.x-k8s.io/node"

// Provider is the kwok cloud provider. It is safe for concurrent use.
type Provider struct {
	mu     sync.Mutex // guards sim and simIDs
	sim    *simcloud.Provider
	simIDs map[string]string // provider ID → the simulated EC2's ID, for what this process launched
	client client.Client
}

// ProviderIDPrefix begins every kwok provider ID; the claim's name follows.
// The simulated EC2's IDs count from 1 in every process, so a restarted
// controller would give a new instance the ID of one launched before it
// — two Nodes, one provider ID. A claim's name is unique while it exists
// (and its Node, the instance, is named for it), and naming the instance
// by it makes a launch repeated after a crash find the instance the first
// one made.
const ProviderIDPrefix = "kwok://"

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New returns a provider launching the catalog's instance types as Nodes
// through c, timed by clk.
func New(c client.Client, types []*cloudprovider.InstanceType, clk clock.Clock) (*Provider, error) {
	sim, err := simcloud.New(nil, types, nil, simcloud.Options{Now: clk.Now})
	if err != nil {
		return nil, err
	}
	return &Provider{sim: sim, simIDs: map[string]string{}, client: c}, nil
}

// Name identifies the provider.
func (p *Provider) Name() string { return "kwok" }

// SetNodePools tells the provider the NodePools there are (see
// simcloud.Provider.SetNodePools).
func (p *Provider) SetNodePools(pools []*v1.NodePool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.SetNodePools(pools)
}

// Create chooses the offering and registers the claim's Node. It is
// idempotent: when the claim's Node exists already — launched by a
// controller killed before it recorded the launch on the claim — that is
// the instance, and the claim is launched as it.
func (p *Provider) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	p.mu.Lock()
	launched, err := p.sim.Create(ctx, nc)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	simID := launched.Status.ProviderID
	launched.Status.ProviderID = ProviderIDPrefix + nc.Name
	err = p.client.Create(ctx, nodeFor(launched))
	if err == nil {
		p.mu.Lock()
		p.simIDs[launched.Status.ProviderID] = simID
		p.mu.Unlock()
		return launched, nil
	}
	p.mu.Lock()
	_ = p.sim.Delete(ctx, withProviderID(launched, simID))
	p.mu.Unlock()
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	existing := &corev1.Node{}
	if err := p.client.Get(ctx, client.ObjectKey{Name: nc.Name}, existing); err != nil {
		return nil, fmt.Errorf("reading the Node of NodeClaim %s, launched before: %w", nc.Name, err)
	}
	if existing.Spec.ProviderID != launched.Status.ProviderID {
		return nil, fmt.Errorf("launching NodeClaim %s: Node %s exists with provider ID %q, not %q", nc.Name, existing.Name, existing.Spec.ProviderID, launched.Status.ProviderID)
	}
	// What the earlier launch chose, as its Node says: the offering's
	// labels, capacity and allocatable.
	for k := range launched.Labels {
		if v, ok := existing.Labels[k]; ok {
			launched.Labels[k] = v
		}
	}
	launched.Status.Capacity, launched.Status.Allocatable = existing.Status.Capacity, existing.Status.Allocatable
	return launched, nil
}

func withProviderID(nc *v1.NodeClaim, id string) *v1.NodeClaim {
	out := nc.DeepCopy()
	out.Status.ProviderID = id
	return out
}

// nodeFor is the Node a kubelet on the claim's instance would register:
// named for the claim, its labels, taints (startup ones and Joiner's
// unregistered taint too, until the claim registers it), capacity and
// allocatable.
func nodeFor(nc *v1.NodeClaim) *corev1.Node {
	labels := map[string]string{v1.LabelHostname: nc.Name, "type": "kwok"}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	taints := append(append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...), v1.UnregisteredTaint)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels, Annotations: map[string]string{AnnotationNode: "fake"}},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: taints},
		Status:     corev1.NodeStatus{Capacity: nc.Status.Capacity, Allocatable: nc.Status.Allocatable},
	}
}

// Delete removes the claim's instance: its Node (the simulated EC2's
// record of it too, when this process launched it).
func (p *Provider) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	in, err := p.Get(ctx, nc.Status.ProviderID)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if simID, ok := p.simIDs[in.Status.ProviderID]; ok { // unknown to a restarted process: fine
		_ = p.sim.Delete(ctx, withProviderID(nc, simID))
		delete(p.simIDs, in.Status.ProviderID)
	}
	p.mu.Unlock()
	return client.IgnoreNotFound(p.client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Name}}))
}

// Get returns the claim of an instance: its Node, read from the API
// server (what the provider chose when it launched is kept nowhere else,
// so a restarted controller finds the same instances).
func (p *Provider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	all, err := p.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, nc := range all {
		if nc.Status.ProviderID == providerID {
			return nc, nil
		}
	}
	return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no kwok instance %s", providerID))
}

// List returns a claim for every instance: every Node annotated for kwok.
func (p *Provider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	var nodes corev1.NodeList
	if err := p.client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	var out []*v1.NodeClaim
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, ok := n.Annotations[AnnotationNode]; !ok || n.Spec.ProviderID == "" {
			continue
		}
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: n.CreationTimestamp}}
		nc.Status.ProviderID = n.Spec.ProviderID
		nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
		out = append(out, nc)
	}
	return out, nil
}

// GetInstanceTypes returns what a NodePool may launch.
func (p *Provider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.GetInstanceTypes(ctx, np)
}

// Version changes whenever the offerings' availability does (an
// insufficient-capacity error learned, or forgotten after 3 minutes).
func (p *Provider) Version() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.Version()
}

// SetCapacity says whether the cloud has capacity for an offering (for
// tests and fault injection: a launch that needs it fails as EC2 would).
func (p *Provider) SetCapacity(instanceType, zone, capacityType string, available bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sim.SetCapacity(instanceType, zone, capacityType, available)
}

// IsDrifted: kwok instances have no image to drift from.
func (p *Provider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// RepairPolicies: none.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy { return nil }
