package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestNominatedEvents: a scale-out's Nominated events are thinned as
// upstream thins them — a burst of 10, then 5 a second, the rest dropped —
// and a pod nominated again within two minutes gets no second event.
func TestNominatedEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	fake := events.NewFakeRecorder(1000)
	r := recorder{r: fake, nominations: newNominationFilter(clk)}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-abc"}}
	pods := make([]*corev1.Pod, 100)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "default", UID: types.UID(fmt.Sprint(i))}}
	}
	recorded := func() int {
		n := 0
		for {
			select {
			case <-fake.Events:
				n++
			default:
				return n
			}
		}
	}
	for _, p := range pods {
		r.nominated(p, nc)
	}
	if n := recorded(); n != nominationBurst {
		t.Fatalf("100 pods nominated at once: %d events, want the burst of %d", n, nominationBurst)
	}
	// A second on: five more tokens, but the first 100 pods are deduped.
	clk.Step(time.Second)
	for _, p := range pods {
		r.nominated(p, nc)
	}
	if n := recorded(); n != 0 {
		t.Fatalf("the same pods nominated again within %s: %d events, want none", nominationDedupe, n)
	}
	fresh := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "default", UID: "new"}}
	r.nominated(fresh, nc)
	if n := recorded(); n != 1 {
		t.Fatalf("a new pod a second later: %d events, want 1", n)
	}
	// Past the dedupe, a pod nominated again (a new launch) is told again.
	clk.Step(nominationDedupe)
	r.nominated(pods[0], nc)
	if n := recorded(); n != 1 {
		t.Fatalf("a pod nominated again after %s: %d events, want 1", nominationDedupe, n)
	}
	// Without the filter (tests that count events), every one is recorded.
	plain := recorder{r: fake}
	for _, p := range pods[:20] {
		plain.nominated(p, nc)
	}
	if n := recorded(); n != 20 {
		t.Fatalf("unfiltered: %d events, want 20", n)
	}
}
