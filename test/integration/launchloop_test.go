//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// TestControllerStopsALaunchLoop: a DaemonSet's pod on every node keeps a
// pod off by required anti-affinity, which provisioning (as upstream's)
// does not weigh when it plans a node. Each node launched for the pod gets
// the DaemonSet's pod and is refused; after state.MaxLaunchRounds such
// nodes the controller stops launching for it — a LaunchLoop event on the
// pod names the reason — and a provisioning pass afterwards creates
// nothing. Without the guard every pass launches another node. The test
// plays the DaemonSet controller (it puts the guard pod on each new Node),
// kwok (the Node turns Ready) and kube-scheduler (it retries the pod,
// updating its status, once each node has been initialized a while).
func TestControllerStopsALaunchLoop(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	c, stop := runController(t, scheme, kwokProvider(t), func(o *controller.Options) {
		// A miss is due 2 s after a node's initialization: by then the
		// Store has the guard pod the test binds to it (a settle before
		// that would find the node free and count no miss). Until then the
		// pod is held back from a second node; the provisioner wakes itself
		// when the miss is due.
		o.LaunchMissAfter = 2 * time.Second
	})
	defer stop()
	createPool(t, kc, "looping", func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "looping", Effect: corev1.TaintEffectNoSchedule}}
	})
	guard := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guard"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "guard"}}, Spec: guardSpec("")}}}
	if err := kc.Create(ctx, guard); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kc.Delete(context.Background(), guard) }()
	pod := pendingPodWith(t, kc, "loop-metrics", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "loop-metrics"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "looping", Operator: corev1.TolerationOpExists}}
		// Only this pool's nodes: NodePools other tests left would take it too.
		p.Spec.NodeSelector = map[string]string{"pool": "looping"}
	})
	defer func() { _ = kc.Delete(context.Background(), pod) }()

	seen := map[string]bool{}
	var guards []*corev1.Pod
	defer func() {
		for _, g := range guards {
			_ = kc.Delete(context.Background(), g)
		}
	}()
	// Each new claim: its Node registers, gets the guard pod and turns
	// Ready; once the controller's Store has it initialized with the guard
	// pod on it, kube-scheduler's retry of the pod starts a pass, which
	// counts the miss and (until the last) launches the next claim.
	eventuallyWithin(t, 4*time.Minute, "the LaunchLoop event", func(ctx context.Context) (bool, error) {
		if podEvent(ctx, kc, pod.Name, "LaunchLoop", "3 nodes were launched for it") {
			return true, nil
		}
		var list v1.NodeClaimList
		if err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: "looping"}); err != nil {
			return false, err
		}
		for i := range list.Items {
			nc := &list.Items[i]
			if seen[nc.Name] {
				continue
			}
			seen[nc.Name] = true
			if len(seen) > state.MaxLaunchRounds {
				t.Fatalf("%d NodeClaims launched for one pod: the launch loop did not stop\n%s", len(seen), loopDiagnosis(ctx, kc, c, pod))
			}
			node := waitRegistered(t, kc, nc)
			g := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "guard-" + node.Name, Namespace: "default", Labels: map[string]string{"app": "guard"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: guard.Name, UID: guard.UID, Controller: ptrTo(true)}}},
				Spec: guardSpec(node.Name)}
			if err := kc.Create(ctx, g); err != nil {
				t.Fatal(err)
			}
			guards = append(guards, g)
			becomeReady(t, kc, node)
			eventually(t, "the Store has the claim initialized and the guard pod on its node", func(context.Context) (bool, error) {
				stored, gp := c.Store().NodeClaim(nc.Name), c.Store().Pod(g.Namespace, g.Name)
				return stored != nil && claimCondition(stored, v1.ConditionInitialized) && gp != nil && gp.Spec.NodeName == node.Name, nil
			})
			retried(t, kc, pod, fmt.Sprintf("0/%d nodes are available: %[1]d node(s) didn't match pod anti-affinity rules.", len(seen)))
		}
		return false, nil
	})
	if len(seen) != state.MaxLaunchRounds {
		t.Fatalf("gave up after %d NodeClaims, want %d", len(seen), state.MaxLaunchRounds)
	}
	if !podEvent(ctx, kc, pod.Name, "LaunchLoop", "anti-affinity") {
		t.Errorf("the LaunchLoop event does not name the anti-affinity")
	}
	if n := counterValue(t, "joiner_provisioner_pods_given_up_total", nil); n < 1 {
		t.Errorf("joiner_provisioner_pods_given_up_total = %v, want 1", n)
	}
	// Stopped: the pod is still pending and provisionable by
	// kube-scheduler's verdict, and a pass plans nothing for it.
	retried(t, kc, pod, "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules.")
	eventually(t, "the retried pod in the Store", func(context.Context) (bool, error) {
		p := c.Store().Pod(pod.Namespace, pod.Name)
		return p != nil && strings.HasPrefix(p.Status.Conditions[0].Message, "0/4"), nil
	})
	if created, err := c.Provision(ctx); err != nil || len(created) != 0 {
		t.Fatalf("a pass after the give-up created %d NodeClaims (%v)", len(created), err)
	}
	if g := c.Store().GivenUpPods(); len(g) != 1 || g[0].Pod.Name != pod.Name {
		t.Errorf("given up on %+v, want %s", g, pod.Name)
	}
}

// guardSpec is the guard DaemonSet's pod: it tolerates everything and
// keeps loop-metrics pods off its node.
func guardSpec(node string) corev1.PodSpec {
	return corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "loop-metrics"}}}}}},
		Containers: []corev1.Container{{Name: "c", Image: "guard", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi")}}}}}
}

// retried is kube-scheduler trying the pod again and reporting why not.
func retried(t *testing.T, kc client.Client, pod *corev1.Pod, message string) {
	t.Helper()
	eventually(t, "the pod's status updated", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: message, LastTransitionTime: metav1.Now()}}
		return kc.Status().Update(ctx, pod) == nil, nil
	})
}

// loopDiagnosis is what a failure shows: the pool's claims, the pod's
// events, and what the controller's Store knows of the pod.
func loopDiagnosis(ctx context.Context, kc client.Client, c *controller.Controller, pod *corev1.Pod) string {
	var b strings.Builder
	var list v1.NodeClaimList
	_ = kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: "looping"})
	for _, nc := range list.Items {
		fmt.Fprintf(&b, "claim %s created %s node %q conditions %v\n", nc.Name, nc.CreationTimestamp.Format(time.RFC3339Nano), nc.Status.NodeName, nc.Status.Conditions)
	}
	var events eventsv1.EventList
	_ = kc.List(ctx, &events, client.InNamespace(pod.Namespace))
	for _, e := range events.Items {
		if e.Regarding.Name == pod.Name || strings.HasPrefix(e.Regarding.Name, "looping-") {
			fmt.Fprintf(&b, "event %s %s %s: %s\n", e.CreationTimestamp.Format(time.RFC3339Nano), e.Regarding.Name, e.Reason, e.Note)
		}
	}
	if p := c.Store().Pod(pod.Namespace, pod.Name); p != nil {
		fmt.Fprintf(&b, "store: pod node %q conditions %v; given up %d; missed %v; awaited %v\n", p.Spec.NodeName, p.Status.Conditions,
			len(c.Store().GivenUpPods()), c.Store().Misses(pod.Namespace, pod.Name), c.Store().AwaitedLaunches())
		for name := range c.Store().AwaitedLaunches() {
			if v := c.Store().View(name); v != nil {
				fmt.Fprintf(&b, "view %s: taints %v labels %v pods %d; refuses: %s\n", name, v.Taints, v.Labels, len(v.Pods), state.MissReason(v, p, provisioning.Volumes{}))
			}
		}
	}
	return b.String()
}
