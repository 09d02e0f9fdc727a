// Package sim is Joiner's simulator: it runs the real provisioning,
// disruption and termination code against an in-memory cluster and a
// simulated EC2 on a virtual clock, driven by a loaded scenario
// (pkg/scenario) or a recorded trace (pkg/replay), and fills a
// report.Report (pkg/report: cost, pod start latency, disruption).
//
// Its parts:
//
//   - the event loop: simulation.go (a run, its options and agenda) and
//     events.go (the virtual clock's queue); moment.go stops a run at a
//     time for plan and explain;
//   - the cluster it drives: the pkg/state Store every decision reads is
//     its only record of the API's objects — pods, their nodes (a pod's
//     spec.nodeName), Nodes with their taints, NodeClaims with their
//     conditions and last pod event — as the API server is a cluster's;
//     state.go writes them as a controller, kubelet or kube-scheduler
//     would, and keeps beside them only what the cloud and the kubelets
//     know of an instance (simNode) and the workload controllers and the
//     kubelet of a pod (simPod: its owner, when it was made and started);
//     cloud.go launches and deletes instances (a
//     launch cohort's nodes open together); disrupt.go, repair.go,
//     preemption.go, reservations.go, launchloop.go and dra.go carry out
//     disruption, node repair, preemption, reservation ends, the
//     launch-loop guard and Dynamic Resource Allocation;
//   - the workload model: build.go turns the input into workloads, whose
//     replica counts pkg/autoscale decides (load curves, the HPA
//     controller's algorithm, KEDA); workloads.go, volumes.go, resize.go,
//     buffers.go, priority.go and spreading.go are Deployments,
//     StatefulSets and Jobs and their pods, volumes, resizes,
//     CapacityBuffers, priority admission and kube-scheduler's default
//     spread (a Deployment's scale-down deletes the pods its ReplicaSet
//     controller would: from the nodes running most of them first;
//     simulation.go's scaleDownOrder); replay.go plays a recorded trace's
//     owners and pods;
//   - the record: report.go, nodes_report.go and overlays_report.go are
//     the recorder that fills the Report; trace.go writes the run as a
//     trace.
package sim
