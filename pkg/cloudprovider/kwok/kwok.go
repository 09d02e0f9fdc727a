// Package kwok is a cloud provider for real API servers without real
// machines: it chooses instance types and offerings as the simulated EC2
// does (from the same catalog), and "launches" an instance by creating the
// Node a kubelet would register, annotated for kwok's controller, which
// makes it Ready and runs its pods.
package kwok

import (
	"context"
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
	mu     sync.Mutex // guards sim
	sim    *simcloud.Provider
	client client.Client
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New returns a provider launching the catalog's instance types as Nodes
// through c, timed by clk.
func New(c client.Client, types []*cloudprovider.InstanceType, clk clock.Clock) (*Provider, error) {
	sim, err := simcloud.New(nil, types, nil, simcloud.Options{Now: clk.Now})
	if err != nil {
		return nil, err
	}
	return &Provider{sim: sim, client: c}, nil
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

// Create chooses the offering and registers the claim's Node.
func (p *Provider) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	p.mu.Lock()
	launched, err := p.sim.Create(ctx, nc)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := p.client.Create(ctx, nodeFor(launched)); err != nil && !apierrors.IsAlreadyExists(err) {
		p.mu.Lock()
		_ = p.sim.Delete(ctx, launched)
		p.mu.Unlock()
		return nil, err
	}
	return launched, nil
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

// Delete removes the claim's Node and instance; NodeClaimNotFoundError
// once both are gone.
func (p *Provider) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	err := p.client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.Delete(ctx, nc)
}

// Get returns the claim of an instance.
func (p *Provider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.Get(ctx, providerID)
}

// List returns a claim for every instance.
func (p *Provider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.List(ctx)
}

// GetInstanceTypes returns what a NodePool may launch.
func (p *Provider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sim.GetInstanceTypes(ctx, np)
}

// IsDrifted: kwok instances have no image to drift from.
func (p *Provider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// RepairPolicies: none.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy { return nil }
