package scenario

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Replay drives a run's workloads from what a cluster recorded (package
// replay builds it from a trace) instead of from manifests and load
// models: each workload scales when and as its controller did, each bare
// pod comes and goes when it did. The simulated autoscaler still decides
// every node, so the NodePools under test, not the recorded ones, say what
// the pods run on.
type Replay struct {
	// Workloads are the recorded pods' controllers, in a fixed order.
	Workloads []ReplayWorkload
	// Pods are pods no modelled controller keeps (bare pods, or pods of a
	// controller kind the simulator does not model): each arrives at At and
	// leaves at Until (never, when Until is zero).
	Pods []ReplayPod
	// NodePools are the recorded NodePools' changes after the start, in
	// order: each replaces the NodePool of its name at At (a new name
	// adds one), as an edit of the NodePool would.
	NodePools []ReplayNodePool
	// NodeClasses are the recorded EC2NodeClasses' changes after the
	// start, in order (a new image drifts the nodes of before it).
	NodeClasses []ReplayNodeClass
	// Interruptions are the cloud's recorded interruptions of instances,
	// in order: each takes a simulated node of the same offering away.
	Interruptions []ReplayInterruption
}

// ReplayInterruption is the cloud taking an instance away at At, as the
// recorded autoscaler's Event said (Reason: SpotInterrupted,
// InstanceStopping, …): the replay interrupts the simulated node most
// like it — of the recorded NodeClaim's instance type, zone and capacity
// type, launched closest to when it was (Launched, from the start; 0 for
// one launched before) — if it runs one.
type ReplayInterruption struct {
	At, Launched                     time.Duration
	Reason, NodeClaim                string
	InstanceType, Zone, CapacityType string
}

// ReplayNodeClass is an EC2NodeClass as it was from At on.
type ReplayNodeClass struct {
	At        time.Duration
	NodeClass *awsv1.EC2NodeClass
}

// ReplayNodePool is a NodePool as it was from At on.
type ReplayNodePool struct {
	At       time.Duration
	NodePool *v1.NodePool
}

// ReplayWorkload is one ReplicaSet, StatefulSet or Job of a recording.
type ReplayWorkload struct {
	// Kind is ReplicaSet, StatefulSet or Job.
	Kind, Namespace, Name string
	// Template is what its pods were made from.
	Template corev1.PodTemplateSpec
	// ClaimTemplates are a StatefulSet's volumeClaimTemplates.
	ClaimTemplates []corev1.PersistentVolumeClaim
	// Steps are its wanted replicas over time, from the run's start, in
	// order; before the first step it does not exist. For a Job, Replicas
	// is its parallelism.
	Steps []ReplicaStep
	// Job is set for a Job: how many pods must succeed and how long each
	// runs.
	Job *ReplayJob
}

// ReplicaStep is a workload's wanted replicas from an offset on.
type ReplicaStep struct {
	At       time.Duration
	Replicas int
}

// ReplayJob is what the simulator needs of a recorded Job.
type ReplayJob struct {
	// Completions still to succeed at the Job's first step.
	Completions int
	// Runtime of each pod once running: the median of what its pods took
	// in the recording (to the end of the recording for one that never
	// finished).
	Runtime time.Duration
}

// ReplayPod is a pod without a modelled controller.
type ReplayPod struct {
	Pod       *corev1.Pod
	At, Until time.Duration
}
