package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ErrNotSynced is returned by a decision asked for before the Store has
// seen the whole cluster (see Controller.Synced).
var ErrNotSynced = errors.New("the controller has not seen the whole cluster yet")

// syncGate holds every decision back until the Store is a complete view:
// each informer the decisions read has handed its whole initial list to
// the Store's handlers (not merely filled its own cache — a handler may
// lag behind it), and the NodePools' instance types were asked of the
// cloud once after that. A node whose pods have not reached the Store yet
// looks empty, and a pass that read it could delete it; upstream gates its
// provisioner and disruption on the same condition (cluster state synced).
//
// It is safe for concurrent use.
type syncGate struct {
	mu      sync.Mutex
	sources []syncSource
	// missing is what the gate last found not synced yet (for /readyz).
	missing []string
	open    chan struct{}
	opened  bool
}

// syncSource is one informer handler the Store is fed by.
type syncSource struct {
	name   string
	synced func() bool
}

func newSyncGate() *syncGate { return &syncGate{open: make(chan struct{})} }

// add is one more source the gate waits for; only before run.
func (g *syncGate) add(name string, synced func() bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sources = append(g.sources, syncSource{name, synced})
}

// pending names the sources whose handlers have not had their initial list.
func (g *syncGate) pending() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, s := range g.sources {
		if !s.synced() {
			out = append(out, s.name)
		}
	}
	return out
}

func (g *syncGate) setMissing(missing []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.missing = missing
}

// gatePoll is how often the gate looks at its sources (client-go's
// WaitForCacheSync looks as often).
const gatePoll = 100 * time.Millisecond

// run waits for every source, then for complete to succeed (it reads what
// the relisted kinds hold and asks the cloud for instance types), and
// opens the gate. It returns when the gate is open or ctx ends.
func (g *syncGate) run(ctx context.Context, complete func(context.Context) error) error {
	logged := time.Time{}
	err := wait.PollUntilContextCancel(ctx, gatePoll, true, func(ctx context.Context) (bool, error) {
		missing := g.pending()
		if len(missing) == 0 {
			if err := complete(ctx); err != nil {
				missing = []string{"instance types (" + err.Error() + ")"}
			}
		}
		g.setMissing(missing)
		if len(missing) > 0 {
			if time.Since(logged) > 10*time.Second {
				log.FromContext(ctx).Info("waiting for the cluster state to sync before deciding anything", "missing", strings.Join(missing, ", "))
				logged = time.Now()
			}
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil // ctx ended: the manager is stopping
	}
	g.mu.Lock()
	if !g.opened {
		g.opened = true
		close(g.open)
	}
	g.mu.Unlock()
	log.FromContext(ctx).Info("cluster state synced: deciding from now on")
	return nil
}

// synced says whether the gate is open.
func (g *syncGate) synced() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// wait blocks until the gate opens (true) or ctx ends (false).
func (g *syncGate) wait(ctx context.Context) bool {
	select {
	case <-g.open:
		return true
	case <-ctx.Done():
		return false
	}
}

// check is the /readyz check: an error naming what has not synced yet.
func (g *syncGate) check(*http.Request) error {
	if g.synced() {
		return nil
	}
	g.mu.Lock()
	missing := g.missing
	g.mu.Unlock()
	if len(missing) == 0 {
		return errors.New("cluster state not synced yet: the informers have not started")
	}
	return fmt.Errorf("cluster state not synced yet: waiting for %s", strings.Join(missing, ", "))
}

// gateRunnable runs the gate on every replica, leader or not, so each
// one's /readyz tells the truth.
type gateRunnable func(context.Context) error

func (r gateRunnable) Start(ctx context.Context) error { return r(ctx) }
func (gateRunnable) NeedLeaderElection() bool          { return false }
