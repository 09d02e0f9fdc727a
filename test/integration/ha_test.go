//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/test/harness"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestLeaderElectionHandsOver: two Joiner processes with --leader-elect.
// Only the leader (leader_election_master_status 1, the Lease's holder)
// acts: a pending pod gets exactly one NodeClaim, made by the leader (its
// karpenter_nodeclaims_created_total), while the follower — whose informers
// see the same pod — creates, terminates and disrupts nothing. The leader
// is SIGKILLed, releasing nothing: the follower takes the Lease once it has
// gone unrenewed for the lease duration, and provisions for the next
// pending pod.
//
// How soon: client-go's elector takes an unrenewed Lease once the lease
// duration has passed since it last saw the record change, and it looks
// every retry period stretched by up to its jitter (JitterFactor 1.2): it
// sees the killed leader's last renewal up to one such period late, and
// the expiry up to another. So the handover comes within lease duration +
// 2 × 2.2 retry periods of the kill; a second more is slack for the API
// server on a loaded machine.
func TestLeaderElectionHandsOver(t *testing.T) {
	ctx := context.Background()
	const (
		leaseDuration = 6 * time.Second
		renewDeadline = 4 * time.Second
		retryPeriod   = time.Second
		leaseName     = "joiner-leader-election"
	)
	bin := buildJoiner(t)
	kubeconfig := startCluster(t)
	_, kc := controllerClient(t)
	flags := []string{"--leader-elect", "--leader-elect-resource-namespace=default",
		"--leader-elect-lease-duration=" + leaseDuration.String(), "--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String()}
	a := newJoiner(t, bin, "joiner-a", kubeconfig, flags...)
	b := newJoiner(t, bin, "joiner-b", kubeconfig, flags...)
	start(t, a)
	start(t, b)

	const pool = "ha"
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{"m6i.xlarge"}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") // this test is about who provisions
	})
	ns := testNamespace(t, pool)
	d := deployment(ns, "app", "3", "1Gi", map[string]string{"pool": pool}) // one pod per m6i.xlarge
	if err := kc.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePool(t, kc, pool, d) })

	leaderOf := func(ctx context.Context) (*harness.Process, *harness.Process, error) {
		var leaders, followers []*harness.Process
		for _, p := range []*harness.Process{a, b} {
			m, err := p.Metrics(ctx)
			if err != nil {
				return nil, nil, err
			}
			if scraped(m, "leader_election_master_status", map[string]string{"name": leaseName}) == 1 {
				leaders = append(leaders, p)
			} else {
				followers = append(followers, p)
			}
		}
		if len(leaders) != 1 {
			return nil, nil, fmt.Errorf("%d leaders", len(leaders))
		}
		return leaders[0], followers[0], nil
	}
	var leader, follower *harness.Process
	eventually(t, "one of the two replicas leading", func(ctx context.Context) (bool, error) {
		var err error
		leader, follower, err = leaderOf(ctx)
		return err == nil, nil
	})
	holder := leaseHolder(t, kc, leaseName)
	t.Logf("%s leads (Lease holder %s); %s follows", leader.Spec.Name, holder, follower.Spec.Name)

	scale(t, kc, d, 1)
	waitRunning(t, kc, ns, 1)
	claims := poolClaims(t, kc, pool)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims for one pending pod with two replicas running, want 1", len(claims))
	}
	lm, err := leader.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := follower.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := scraped(lm, "karpenter_nodeclaims_created_total", nil); got != 1 {
		t.Errorf("the leader created %v NodeClaims, want 1", got)
	}
	for _, name := range []string{"karpenter_nodeclaims_created_total", "karpenter_nodeclaims_terminated_total", "karpenter_voluntary_disruption_decisions_total"} {
		if got := scraped(fm, name, nil); got != 0 {
			t.Errorf("the follower acted: %s %v", name, got)
		}
	}
	if got := scraped(fm, "leader_election_master_status", map[string]string{"name": leaseName}); got != 0 {
		t.Errorf("the follower reports leader_election_master_status %v", got)
	}

	// SIGKILL the leader: its Lease is not released.
	leader.Kill()
	killed := time.Now()
	var handover time.Duration
	eventuallyWithin(t, time.Minute, "the follower holding the Lease", func(ctx context.Context) (bool, error) {
		var l coordinationv1.Lease
		if err := kc.Get(ctx, client.ObjectKey{Namespace: "default", Name: leaseName}, &l); err != nil {
			return false, err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == holder {
			return false, nil
		}
		handover = time.Since(killed)
		return true, nil
	})
	limit := leaseDuration + 2*time.Duration((1+leaderelection.JitterFactor)*float64(retryPeriod)) + time.Second
	t.Logf("handed over %s after the kill (lease duration %s; limit %s)", handover.Round(10*time.Millisecond), leaseDuration, limit)
	if handover > limit {
		t.Errorf("the follower took the Lease %s after the leader was killed, more than %s", handover, limit)
	}
	eventually(t, "the new leader reporting it leads", func(ctx context.Context) (bool, error) {
		m, err := follower.Metrics(ctx)
		return err == nil && scraped(m, "leader_election_master_status", map[string]string{"name": leaseName}) == 1, nil
	})

	// The new leader acts: the next pending pod gets its node.
	scale(t, kc, d, 2)
	waitRunning(t, kc, ns, 2)
	if claims := poolClaims(t, kc, pool); len(claims) != 2 {
		t.Errorf("%d NodeClaims for two pods of a node each, want 2", len(claims))
	}
	fm, err = follower.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := scraped(fm, "karpenter_nodeclaims_created_total", nil); got != 1 {
		t.Errorf("the new leader created %v NodeClaims, want 1", got)
	}
}

func leaseHolder(t *testing.T, kc client.Client, name string) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := kc.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Fatalf("Lease %s has no holder though a replica leads", name)
	}
	return *l.Spec.HolderIdentity
}

// waitRunning waits for the namespace to have exactly n pods, all bound
// and Running.
func waitRunning(t *testing.T, kc client.Client, ns string, n int) {
	t.Helper()
	waitRunningWithin(t, kc, ns, n, 2*time.Minute)
}

// waitRunningWithin is waitRunning with its own deadline.
func waitRunningWithin(t *testing.T, kc client.Client, ns string, n int, timeout time.Duration) {
	t.Helper()
	eventuallyWithin(t, timeout, fmt.Sprintf("%d pods bound and Running", n), func(ctx context.Context) (bool, error) {
		return allRunning(ctx, kc, ns, n)
	})
}

// allRunning: the namespace has exactly n pods, all bound and Running.
func allRunning(ctx context.Context, kc client.Client, ns string, n int) (bool, error) {
	pods, err := podsOf(ctx, kc, ns)
	if err != nil {
		return false, err
	}
	running := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	return running == n && len(pods) == n, nil
}

func poolClaims(t *testing.T, kc client.Client, pool string) []v1.NodeClaim {
	t.Helper()
	var list v1.NodeClaimList
	if err := kc.List(context.Background(), &list, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// removePool leaves no claims, Nodes or pods of the pool to the tests after
// this one: the Deployment goes, the claims are deleted (a Joiner still
// running terminates them) and the pool. It only logs what it could not
// remove in a minute: the test has its verdict already.
func removePool(t *testing.T, kc client.Client, pool string, d client.Object) {
	ctx := context.Background()
	_ = kc.Delete(ctx, d)
	_ = kc.DeleteAllOf(ctx, &v1.NodeClaim{}, client.MatchingLabels{v1.LabelNodePool: pool})
	var claims v1.NodeClaimList
	var nodes corev1.NodeList
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			return false, nil
		}
		if err := kc.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			return false, nil
		}
		return len(claims.Items) == 0 && len(nodes.Items) == 0, nil
	})
	if err != nil {
		t.Logf("cleanup: NodePool %s still has %d claims and %d Nodes", pool, len(claims.Items), len(nodes.Items))
	}
	_ = kc.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
}
