//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// TestLaunchCohortRegistersTogether: the NodeClaims one provisioning pass
// creates are one launch cohort, and a Node of it keeps its unregistered
// taint (no pod can be bound to it) until every other Node of the cohort
// has appeared — so kube-scheduler gets them together and spreads the
// pass's pods over all of them, instead of filling the first to come. The
// simulated cloud registers the Nodes seconds apart; without the hold the
// first would be registered seconds before the last appeared.
func TestLaunchCohortRegistersTogether(t *testing.T) {
	scheme, kc := controllerClient(t)
	boot := simcloud.BootModel{Launch: simcloud.Latency{Mean: time.Second}, Registration: simcloud.Latency{Mean: 3 * time.Second, Stddev: 2 * time.Second},
		Initialization: simcloud.Latency{Mean: time.Second}}
	_, stop := runController(t, scheme, func(_ context.Context, mgr manager.Manager) (controller.CloudProvider, error) {
		return kwok.NewWithOptions(mgr.GetClient(), catalogTypes(t, catalog.Options{Region: "us-east-1"}),
			kwok.Options{Name: "sim", Clock: clock.RealClock{}, Boot: &boot, Rand: rand.New(rand.NewSource(7))})
	})
	defer stop()
	// Four pods that each need a node of their own: one pass, four claims.
	// Before the controller stops (defers run last first): the pool, its
	// claims, Nodes and pods gone, so no later test's controller meets them.
	remove := podPerNode(t, kc, "cohort")
	defer remove()
	var claims v1.NodeClaimList
	said := map[string]string{} // claim → what its Registered condition said while it waited
	eventuallyWithin(t, time.Minute, "four NodeClaims registered", func(ctx context.Context) (bool, error) {
		if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: "cohort"}); err != nil {
			return false, err
		}
		n := 0
		for i := range claims.Items {
			for _, c := range claims.Items[i].Status.Conditions {
				if c.Type == v1.ConditionRegistered && c.Status == metav1.ConditionUnknown {
					said[claims.Items[i].Name] = c.Reason + ": " + c.Message
				}
			}
			if claimCondition(&claims.Items[i], v1.ConditionRegistered) {
				n++
			}
		}
		return n == 4, nil
	})
	cohorts := map[string][]v1.NodeClaim{}
	for _, nc := range claims.Items {
		cohorts[state.Cohort(&nc)] = append(cohorts[state.Cohort(&nc)], nc)
	}
	if len(cohorts) != 1 || len(cohorts[""]) != 0 {
		t.Fatalf("claims by cohort: %v; want the four in one", cohortNames(cohorts))
	}
	var first, last time.Time // the Nodes' appearances
	for _, nc := range claims.Items {
		node := &corev1.Node{}
		// Ready too, so the simulated cloud has nothing left to do when
		// the test ends.
		eventually(t, "Node "+nc.Status.NodeName+" Ready", func(ctx context.Context) (bool, error) {
			return nodeReady(node), kc.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node)
		})
		at := node.CreationTimestamp.Time
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if last.Sub(first) < 2*time.Second {
		t.Fatalf("the Nodes appeared within %s: the boots do not test the hold", last.Sub(first))
	}
	// The first to appear waited seconds, saying so (a poll may miss a
	// short wait, not this one).
	if len(said) == 0 {
		t.Error("no claim's Registered condition said it waited for its cohort")
	}
	for name, why := range said {
		if !strings.HasPrefix(why, "AwaitingLaunchCohort: its Node waits for the other NodeClaims of launch cohort ") {
			t.Errorf("%s's Registered condition while it waited: %q", name, why)
		}
	}
	for _, nc := range claims.Items {
		reg := conditionAt(&nc, v1.ConditionRegistered)
		if reg.Before(last) {
			t.Errorf("%s registered at %s, before the cohort's last Node appeared (%s; the first at %s)", nc.Name, reg.Format(time.TimeOnly), last.Format(time.TimeOnly), first.Format(time.TimeOnly))
		}
	}
}

// conditionAt is when the claim's condition last changed.
func conditionAt(nc *v1.NodeClaim, t string) time.Time {
	for _, c := range nc.Status.Conditions {
		if c.Type == t {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func cohortNames(by map[string][]v1.NodeClaim) map[string][]string {
	out := map[string][]string{}
	for k, ncs := range by {
		for _, nc := range ncs {
			out[k] = append(out[k], nc.Name)
		}
	}
	return out
}

// podPerNode makes a NodePool of m6i.large nodes that only its pods
// tolerate, and four pending pods that each need a node of their own (one
// provisioning pass, four NodeClaims). remove deletes them, the pool's
// claims and Nodes with them: call it before the controller stops.
func podPerNode(t *testing.T, kc client.Client, pool string) (remove func()) {
	t.Helper()
	var pods []*corev1.Pod
	taint := corev1.Taint{Key: pool + "-only", Effect: corev1.TaintEffectNoSchedule}
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{taint}
		np.Spec.Template.Spec.Requirements[1].Values = []string{"m6i.large"}
	})
	for i := 1; i <= 4; i++ {
		pods = append(pods, pendingPodWith(t, kc, fmt.Sprintf("%s-%d", pool, i), func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": pool}
			p.Spec.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists}}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pool}}}}}}
		}))
	}
	return func() {
		for _, p := range pods[1:] {
			_ = kc.Delete(context.Background(), p)
		}
		removePool(t, kc, pool, pods[0])
	}
}
