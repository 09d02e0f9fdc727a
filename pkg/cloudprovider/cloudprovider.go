// Package cloudprovider is the seam between Joiner's decisions and a cloud:
// one small interface, and the instance types and offerings that decisions
// are made over. Below it: catalog (the EC2 facts) and sim (a simulated
// EC2 over them, which the simulator launches through).
package cloudprovider

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// CloudProvider launches and removes the machines behind NodeClaims. It
// is safe for concurrent use: a controller launches and terminates many
// NodeClaims at once.
type CloudProvider interface {
	// Create launches an instance for the NodeClaim, choosing among the
	// instance types and offerings its requirements allow (cheapest first),
	// and returns the NodeClaim with status.providerID, capacity,
	// allocatable and the resolved labels (instance type, zone, capacity
	// type) set. It returns an InsufficientCapacityError when no allowed
	// offering could be launched.
	Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error)
	// Delete terminates the NodeClaim's instance. It returns a
	// NodeClaimNotFoundError once the instance is gone.
	Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error
	// Get returns the NodeClaim for a provider ID, or NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*v1.NodeClaim, error)
	// List returns a NodeClaim for every instance the provider runs.
	List(ctx context.Context) ([]*v1.NodeClaim, error)
	// GetInstanceTypes returns the instance types a NodePool may launch,
	// with their offerings' current prices and availability.
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*InstanceType, error)
	// IsDrifted reports why the instance no longer matches its NodeClass
	// (a new image, other subnets, …), or "" when it does.
	IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the node conditions after which an unhealthy
	// node is replaced.
	RepairPolicies() []RepairPolicy
	// Name identifies the provider in logs and metrics.
	Name() string
}

// Interruption is the cloud's notice that something happens to an instance
// (a spot interruption warning: two minutes on EC2; a scheduled
// maintenance; the instance stopping or terminated outside Joiner).
type Interruption struct {
	ProviderID string
	Kind       InterruptionKind
	// Handled, when set, is called once the controller has acted on the
	// notice (the AWS provider deletes the queue message then, so a notice
	// is never lost to a crash between receiving and acting on it).
	Handled func()
}

// InterruptionKind says what the notice is.
type InterruptionKind string

// The notices upstream Karpenter's interruption controller acts on.
const (
	// SpotInterruption: the cloud reclaims a spot instance.
	SpotInterruption InterruptionKind = "SpotInterruption"
	// ScheduledChange: the cloud has scheduled maintenance that takes the
	// instance down (an AWS Health event).
	ScheduledChange InterruptionKind = "ScheduledChange"
	// InstanceStopping and InstanceTerminating: the instance is stopping
	// (or stopped), or shutting down (or terminated), outside Joiner.
	InstanceStopping    InterruptionKind = "InstanceStopping"
	InstanceTerminating InterruptionKind = "InstanceTerminating"
	// RebalanceRecommendation: the spot instance is at elevated risk of
	// interruption. Upstream records an Event and does nothing else.
	RebalanceRecommendation InterruptionKind = "RebalanceRecommendation"
	// CapacityBlockExpiring: the instance runs in a Capacity Block that
	// ends within 40 minutes (EC2 takes it back 30 minutes before the
	// end); upstream's capacity-block expiration controller deletes its
	// claim.
	CapacityBlockExpiring InterruptionKind = "CapacityBlockExpiring"
	// CapacityReservationInterrupted: the owner of the interruptible
	// capacity reservation the instance runs in reclaims it (a two-minute
	// warning); the reservation is offered no more.
	CapacityReservationInterrupted InterruptionKind = "CapacityReservationInterrupted"
)

// Disrupts reports whether the notice means the instance goes away, so
// its claim is deleted at once (every kind but RebalanceRecommendation).
func (k InterruptionKind) Disrupts() bool { return k != RebalanceRecommendation }

// Interrupter is a cloud provider that sends interruption notices (the
// AWS provider reads them from its SQS queue). A provider marks a
// reclaimed spot offering unavailable itself, as the AWS provider does, so
// replacements go elsewhere; the controller deletes the instance's claim.
type Interrupter interface {
	Interruptions() <-chan Interruption
}

// DriftReason says why a NodeClaim drifted from its NodeClass; "" is none.
type DriftReason string

// RepairPolicy replaces a node whose condition has had a status for longer
// than the toleration.
type RepairPolicy struct {
	ConditionType      corev1.NodeConditionType
	ConditionStatus    corev1.ConditionStatus
	TolerationDuration time.Duration
}

// AWSRepairPolicies are upstream's AWS provider's: the kubelet's Ready
// False or Unknown for 30 minutes, and the EKS node monitoring agent's
// conditions False — accelerated hardware for 10 minutes, storage,
// networking, kernel and container runtime for 30.
func AWSRepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	}
}
