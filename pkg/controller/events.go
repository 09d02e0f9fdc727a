package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// recorder records Kubernetes Events as upstream's reasons name them.
type recorder struct {
	r events.EventRecorder
	// nominations, when set, thins the Nominated events as upstream does
	// (nil: every one is recorded).
	nominations *nominationFilter
}

// event records an Event on obj (related, if set, is the other object it
// concerns).
func (r recorder) event(obj, related runtime.Object, eventType, reason, format string, args ...any) {
	r.r.Eventf(obj, related, eventType, reason, reason, format, args...)
}

// nominated records that the pod should schedule on the NodeClaim
// launched for it: an event per pod at most every nominationDedupe, and
// at most nominationQPS of them a second (a burst of nominationBurst),
// the rest dropped — upstream's PodNominationRateLimiter and dedupe by pod
// UID. One per pod, a 5,000-pod scale-out posted 4,250 Events while
// kube-scheduler, kwok and the claims' registration shared the API
// server, and the Nodes Ready at 28 s were registered at 62 s.
func (r recorder) nominated(pod *corev1.Pod, nc *v1.NodeClaim) {
	if r.nominations != nil && !r.nominations.admit(pod) {
		return
	}
	r.event(pod, nc, corev1.EventTypeNormal, "Nominated", "Pod should schedule on: nodeclaim/%s", nc.Name)
}

// Upstream's Nominated event limits (karpenter pkg/events and
// provisioning/scheduling/events.go).
const (
	nominationQPS    = 5
	nominationBurst  = 10
	nominationDedupe = 2 * time.Minute
	// nominationsSeen bounds the dedupe's memory: past it, the pods least
	// recently nominated are forgotten first.
	nominationsSeen = 1 << 16
)

// nominationFilter admits a pod's Nominated event once per
// nominationDedupe, within a token bucket shared by every pod.
type nominationFilter struct {
	mu      sync.Mutex
	seen    *cache.LRUExpireCache
	limiter flowcontrol.RateLimiter
}

func newNominationFilter(c clock.Clock) *nominationFilter {
	return &nominationFilter{seen: cache.NewLRUExpireCacheWithClock(nominationsSeen, c),
		limiter: flowcontrol.NewTokenBucketRateLimiterWithClock(nominationQPS, nominationBurst, c)}
}

// admit: the pod was not nominated within nominationDedupe and a token is
// left. As upstream, a pod deduped is remembered even when the bucket then
// drops its event.
func (f *nominationFilter) admit(pod *corev1.Pod) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := string(pod.UID)
	if key == "" {
		key = pod.Namespace + "/" + pod.Name
	}
	if _, ok := f.seen.Get(key); ok {
		return false
	}
	f.seen.Add(key, struct{}{}, nominationDedupe)
	return f.limiter.TryAccept()
}
