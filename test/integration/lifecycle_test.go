//go:build integration

package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
)

// gatedLaunches is the kwok provider with a gate in Create: each launch
// waits until want launches are under way together, or until wait has
// passed, and the most under way at once is recorded.
type gatedLaunches struct {
	*kwok.Provider
	want int
	wait time.Duration

	mu       sync.Mutex
	inFlight int
	most     int
	open     chan struct{}
}

func (g *gatedLaunches) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight >= g.want && g.open != nil {
		close(g.open)
		g.open = nil
	}
	open := g.open
	g.mu.Unlock()
	if open != nil {
		select {
		case <-open:
		case <-time.After(g.wait):
		case <-ctx.Done():
		}
	}
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	return g.Provider.Create(ctx, nc)
}

// TestLifecycleLaunchesClaimsAtOnce: the NodeClaims of one provisioning
// pass are launched together, as upstream's lifecycle controller (1,000
// reconciles at once) launches them — one at a time, a scale-out's launches
// queued behind each other for seconds, and its launch cohort registered
// with the last. Four pods that need a node each make four claims; the
// provider holds each launch until all four are under way (or 20 s).
func TestLifecycleLaunchesClaimsAtOnce(t *testing.T) {
	scheme, kc := controllerClient(t)
	gate := &gatedLaunches{want: 4, wait: 20 * time.Second, open: make(chan struct{})}
	_, stop := runController(t, scheme, func(ctx context.Context, mgr manager.Manager) (controller.CloudProvider, error) {
		p, err := kwokProvider(t)(ctx, mgr)
		if err != nil {
			return nil, err
		}
		gate.Provider = p.(*kwok.Provider)
		return gate, nil
	})
	defer stop()
	remove := podPerNode(t, kc, "launch")
	defer remove()
	eventuallyWithin(t, 2*time.Minute, "four NodeClaims launched", func(ctx context.Context) (bool, error) {
		var claims v1.NodeClaimList
		if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: "launch"}); err != nil {
			return false, err
		}
		n := 0
		for i := range claims.Items {
			if claimCondition(&claims.Items[i], v1.ConditionLaunched) {
				n++
			}
		}
		return n >= 4, nil
	})
	gate.mu.Lock()
	most := gate.most
	gate.mu.Unlock()
	if most < 4 {
		t.Errorf("at most %d launches were under way at once, want the pass's 4 together", most)
	}
}
