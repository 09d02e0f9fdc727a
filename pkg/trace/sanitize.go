package trace

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
)

// Sanitize is the part of obj a trace keeps — what scheduling and
// autoscaling need — as a new object; nil for a kind traces do not hold.
// Nothing else of obj is copied: a field this function does not name (a
// container's env, command, args, image, probes, mounts; a volume's source
// other than a claim; an annotation other than Karpenter's and a pod's
// deletion cost; a node class's user data; a StorageClass's parameters; a
// PersistentVolume's source) is never written.
func Sanitize(obj any) any {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{TypeMeta: typeMeta("v1", "Pod"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: podSpec(o.Spec), Status: podStatus(o.Status)}
	case *appsv1.Deployment:
		return &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec: appsv1.DeploymentSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector, Template: template(o.Spec.Template), Strategy: o.Spec.Strategy,
				MinReadySeconds: o.Spec.MinReadySeconds, Paused: o.Spec.Paused},
			Status: appsv1.DeploymentStatus{ObservedGeneration: o.Status.ObservedGeneration, Replicas: o.Status.Replicas, UpdatedReplicas: o.Status.UpdatedReplicas,
				ReadyReplicas: o.Status.ReadyReplicas, AvailableReplicas: o.Status.AvailableReplicas}}
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{TypeMeta: typeMeta("apps/v1", "StatefulSet"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec: appsv1.StatefulSetSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector, Template: template(o.Spec.Template),
				VolumeClaimTemplates: claimTemplates(o.Spec.VolumeClaimTemplates), ServiceName: o.Spec.ServiceName, PodManagementPolicy: o.Spec.PodManagementPolicy,
				UpdateStrategy: o.Spec.UpdateStrategy, MinReadySeconds: o.Spec.MinReadySeconds, PersistentVolumeClaimRetentionPolicy: o.Spec.PersistentVolumeClaimRetentionPolicy},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: o.Status.ObservedGeneration, Replicas: o.Status.Replicas, ReadyReplicas: o.Status.ReadyReplicas}}
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{TypeMeta: typeMeta("apps/v1", "ReplicaSet"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec:   appsv1.ReplicaSetSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector, Template: template(o.Spec.Template), MinReadySeconds: o.Spec.MinReadySeconds},
			Status: appsv1.ReplicaSetStatus{Replicas: o.Status.Replicas, ReadyReplicas: o.Status.ReadyReplicas, ObservedGeneration: o.Status.ObservedGeneration}}
	case *appsv1.DaemonSet:
		return &appsv1.DaemonSet{TypeMeta: typeMeta("apps/v1", "DaemonSet"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec: appsv1.DaemonSetSpec{Selector: o.Spec.Selector, Template: template(o.Spec.Template), UpdateStrategy: o.Spec.UpdateStrategy},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: o.Status.DesiredNumberScheduled, CurrentNumberScheduled: o.Status.CurrentNumberScheduled,
				NumberReady: o.Status.NumberReady}}
	case *batchv1.Job:
		return &batchv1.Job{TypeMeta: typeMeta("batch/v1", "Job"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: jobSpec(o.Spec),
			Status: batchv1.JobStatus{StartTime: o.Status.StartTime, CompletionTime: o.Status.CompletionTime, Active: o.Status.Active,
				Succeeded: o.Status.Succeeded, Failed: o.Status.Failed}}
	case *batchv1.CronJob:
		return &batchv1.CronJob{TypeMeta: typeMeta("batch/v1", "CronJob"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec: batchv1.CronJobSpec{Schedule: o.Spec.Schedule, TimeZone: o.Spec.TimeZone, StartingDeadlineSeconds: o.Spec.StartingDeadlineSeconds,
				ConcurrencyPolicy: o.Spec.ConcurrencyPolicy, Suspend: o.Spec.Suspend,
				JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: templateMeta(o.Spec.JobTemplate.ObjectMeta), Spec: jobSpec(o.Spec.JobTemplate.Spec)}}}
	case *autoscalingv2.HorizontalPodAutoscaler:
		// Its spec is scaling's own (the target, bounds, metrics, behavior);
		// the status says what it did.
		return &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: typeMeta("autoscaling/v2", "HorizontalPodAutoscaler"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec: *o.Spec.DeepCopy(), Status: autoscalingv2.HorizontalPodAutoscalerStatus{ObservedGeneration: o.Status.ObservedGeneration,
				LastScaleTime: o.Status.LastScaleTime, CurrentReplicas: o.Status.CurrentReplicas, DesiredReplicas: o.Status.DesiredReplicas,
				CurrentMetrics: o.Status.CurrentMetrics}}
	case *policyv1.PodDisruptionBudget:
		return &policyv1.PodDisruptionBudget{TypeMeta: typeMeta("policy/v1", "PodDisruptionBudget"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: *o.Spec.DeepCopy(),
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: o.Status.DisruptionsAllowed, CurrentHealthy: o.Status.CurrentHealthy,
				DesiredHealthy: o.Status.DesiredHealthy, ExpectedPods: o.Status.ExpectedPods}}
	case *corev1.PersistentVolumeClaim:
		return &corev1.PersistentVolumeClaim{TypeMeta: typeMeta("v1", "PersistentVolumeClaim"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: claimSpec(o.Spec),
			Status: corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase, Capacity: o.Status.Capacity}}
	case *corev1.PersistentVolume:
		pv := &corev1.PersistentVolume{TypeMeta: typeMeta("v1", "PersistentVolume"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec: corev1.PersistentVolumeSpec{Capacity: o.Spec.Capacity, AccessModes: o.Spec.AccessModes, StorageClassName: o.Spec.StorageClassName,
				VolumeMode: o.Spec.VolumeMode, NodeAffinity: o.Spec.NodeAffinity, PersistentVolumeReclaimPolicy: o.Spec.PersistentVolumeReclaimPolicy},
			Status: corev1.PersistentVolumeStatus{Phase: o.Status.Phase}}
		if r := o.Spec.ClaimRef; r != nil {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
		}
		return pv
	case *storagev1.StorageClass:
		return &storagev1.StorageClass{TypeMeta: typeMeta("storage.k8s.io/v1", "StorageClass"), ObjectMeta: objectMeta(o.ObjectMeta), Provisioner: o.Provisioner,
			ReclaimPolicy: o.ReclaimPolicy, VolumeBindingMode: o.VolumeBindingMode, AllowedTopologies: o.AllowedTopologies}
	case *corev1.Node:
		return &corev1.Node{TypeMeta: typeMeta("v1", "Node"), ObjectMeta: objectMeta(o.ObjectMeta),
			Spec: corev1.NodeSpec{ProviderID: o.Spec.ProviderID, Taints: o.Spec.Taints, Unschedulable: o.Spec.Unschedulable},
			Status: corev1.NodeStatus{Capacity: o.Status.Capacity, Allocatable: o.Status.Allocatable, Conditions: nodeConditions(o.Status.Conditions),
				NodeInfo: corev1.NodeSystemInfo{Architecture: o.Status.NodeInfo.Architecture, OperatingSystem: o.Status.NodeInfo.OperatingSystem,
					KubeletVersion: o.Status.NodeInfo.KubeletVersion}}}
	case *v1.NodeClaim:
		return &v1.NodeClaim{TypeMeta: typeMeta(v1.Group+"/v1", "NodeClaim"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: *o.Spec.DeepCopy(), Status: *o.Status.DeepCopy()}
	case *v1.NodePool:
		return &v1.NodePool{TypeMeta: typeMeta(v1.Group+"/v1", "NodePool"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: nodePoolSpec(o.Spec), Status: *o.Status.DeepCopy()}
	case *awsv1.EC2NodeClass:
		nc := &awsv1.EC2NodeClass{TypeMeta: typeMeta("karpenter.k8s.aws/v1", "EC2NodeClass"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: *o.Spec.DeepCopy(), Status: *o.Status.DeepCopy()}
		nc.Spec.UserData = nil // a bootstrap script may hold credentials
		return nc
	case *corev1.Event:
		// What happened to what, when: the message (which may name
		// instances, hosts or users) is not kept.
		return &corev1.Event{TypeMeta: typeMeta("v1", "Event"), ObjectMeta: objectMeta(o.ObjectMeta),
			InvolvedObject: corev1.ObjectReference{Kind: o.InvolvedObject.Kind, Name: o.InvolvedObject.Name, APIVersion: o.InvolvedObject.APIVersion},
			Reason:         o.Reason, Type: o.Type, Count: o.Count, FirstTimestamp: o.FirstTimestamp, LastTimestamp: o.LastTimestamp, EventTime: o.EventTime}
	case *v1alpha1.NodeOverlay:
		return &v1alpha1.NodeOverlay{TypeMeta: typeMeta(v1.Group+"/v1alpha1", "NodeOverlay"), ObjectMeta: objectMeta(o.ObjectMeta), Spec: *o.Spec.DeepCopy(), Status: *o.Status.DeepCopy()}
	}
	return nil
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// karpenterPrefixes are the annotation prefixes a trace keeps: Karpenter's
// own (do-not-disrupt, the NodePool hash, the node class's, …).
var karpenterPrefixes = []string{"karpenter.sh/", "karpenter.k8s.aws/", "compatibility.karpenter.sh/", "compatibility.karpenter.k8s.aws/"}

// schedulingAnnotations are the other annotations a trace keeps, by name:
// a pod's deletion cost decides which pods a ReplicaSet's scale-down
// deletes and what a node costs consolidation to disrupt — a replay
// without it ranks them otherwise than the cluster did.
var schedulingAnnotations = []string{corev1.PodDeletionCost}

// keptAnnotations are the annotations of in that a trace keeps:
// Karpenter's and the schedulingAnnotations.
func keptAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if slices.Contains(schedulingAnnotations, k) || slices.ContainsFunc(karpenterPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func objectMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp, DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
		Labels: m.Labels, Annotations: keptAnnotations(m.Annotations), OwnerReferences: m.OwnerReferences}
}

func templateMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Labels: m.Labels, Annotations: keptAnnotations(m.Annotations)}
}

func template(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: templateMeta(t.ObjectMeta), Spec: podSpec(t.Spec)}
}

func jobSpec(s batchv1.JobSpec) batchv1.JobSpec {
	return batchv1.JobSpec{Parallelism: s.Parallelism, Completions: s.Completions, CompletionMode: s.CompletionMode, BackoffLimit: s.BackoffLimit,
		ActiveDeadlineSeconds: s.ActiveDeadlineSeconds, TTLSecondsAfterFinished: s.TTLSecondsAfterFinished, Suspend: s.Suspend, Selector: s.Selector,
		Template: template(s.Template)}
}

// podSpec keeps what places a pod and what it asks of a node.
func podSpec(s corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{NodeName: s.NodeName, NodeSelector: s.NodeSelector, Affinity: s.Affinity, Tolerations: s.Tolerations,
		TopologySpreadConstraints: s.TopologySpreadConstraints, Priority: s.Priority, PriorityClassName: s.PriorityClassName,
		PreemptionPolicy: s.PreemptionPolicy, SchedulerName: s.SchedulerName, RuntimeClassName: s.RuntimeClassName, Overhead: s.Overhead,
		HostNetwork: s.HostNetwork, TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds, RestartPolicy: s.RestartPolicy,
		ResourceClaims: s.ResourceClaims, Resources: s.Resources,
		Containers: containers(s.Containers), InitContainers: containers(s.InitContainers)}
	for _, v := range s.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out.Volumes = append(out.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			t := v.Ephemeral.VolumeClaimTemplate
			out.Volumes = append(out.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{ObjectMeta: templateMeta(t.ObjectMeta), Spec: claimSpec(t.Spec)}}}})
		}
	}
	return out
}

// containers keep their names, resources, ports and restart policy (an
// init container that restarts is a sidecar).
func containers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, ResizePolicy: c.ResizePolicy, RestartPolicy: c.RestartPolicy}
		for _, p := range c.Ports {
			out[i].Ports = append(out[i].Ports, corev1.ContainerPort{ContainerPort: p.ContainerPort, HostPort: p.HostPort, Protocol: p.Protocol, HostIP: p.HostIP})
		}
	}
	return out
}

func claimSpec(s corev1.PersistentVolumeClaimSpec) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{AccessModes: s.AccessModes, Selector: s.Selector, Resources: s.Resources, VolumeName: s.VolumeName,
		StorageClassName: s.StorageClassName, VolumeMode: s.VolumeMode}
}

func claimTemplates(in []corev1.PersistentVolumeClaim) []corev1.PersistentVolumeClaim {
	var out []corev1.PersistentVolumeClaim
	for _, c := range in {
		out = append(out, corev1.PersistentVolumeClaim{ObjectMeta: templateMeta(c.ObjectMeta), Spec: claimSpec(c.Spec)})
		out[len(out)-1].Name = c.Name
	}
	return out
}

// podStatus keeps where and how far a pod got: its phase, its conditions
// without their messages (kube-scheduler's says why not; an eviction's
// DisruptionTarget says it was evicted), the node it was nominated to,
// and its containers' states and resources (an in-place resize).
func podStatus(s corev1.PodStatus) corev1.PodStatus {
	out := corev1.PodStatus{Phase: s.Phase, NominatedNodeName: s.NominatedNodeName, StartTime: s.StartTime, QOSClass: s.QOSClass, Resize: s.Resize}
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
	}
	for _, cs := range s.ContainerStatuses {
		st := corev1.ContainerStatus{Name: cs.Name, Ready: cs.Ready, Started: cs.Started, RestartCount: cs.RestartCount,
			AllocatedResources: cs.AllocatedResources, Resources: cs.Resources}
		if r := cs.State.Running; r != nil {
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: r.StartedAt}
		}
		if t := cs.State.Terminated; t != nil {
			st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
		}
		out.ContainerStatuses = append(out.ContainerStatuses, st)
	}
	return out
}

func nodeConditions(in []corev1.NodeCondition) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	for _, c := range in {
		out = append(out, corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
	}
	return out
}

// nodePoolSpec is the NodePool's spec with its template's annotations
// kept to Karpenter's.
func nodePoolSpec(s v1.NodePoolSpec) v1.NodePoolSpec {
	out := *s.DeepCopy()
	out.Template.Annotations = keptAnnotations(s.Template.Annotations)
	return out
}
