package autoscale

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// KEDA is a ScaledObject with a queue-length trigger: replicas for the
// queue's length (its Load), to zero after the cooldown.
type KEDA struct {
	so         *scenario.ScaledObject
	load       *Load
	perReplica float64
	activation float64
	minR, maxR int
	cooldown   time.Duration
	lastActive time.Time
}

// Evaluate is one poll at now (start: the run's) of a target with current
// replicas; it returns the new replica count.
func (k *KEDA) Evaluate(now, start time.Time, current int) int {
	q := k.load.At(now.Sub(start))
	if q > k.activation {
		k.lastActive = now
		return Clamp(int(math.Ceil(q/k.perReplica)), max(k.minR, 1), k.maxR)
	}
	if !k.lastActive.IsZero() && now.Sub(k.lastActive) < k.cooldown {
		return current
	}
	return k.minR
}

// NewKEDA reads the ScaledObject's replica bounds, cooldown and
// queue-length trigger (queueLength, activationQueueLength) over load.
func NewKEDA(so *scenario.ScaledObject, load *Load) (*KEDA, error) {
	k := &KEDA{so: so, load: load, minR: 0, maxR: 100, cooldown: 300 * time.Second, perReplica: 5}
	if so.Spec.MinReplicaCount != nil {
		k.minR = int(*so.Spec.MinReplicaCount)
	}
	if so.Spec.MaxReplicaCount != nil {
		k.maxR = int(*so.Spec.MaxReplicaCount)
	}
	if so.Spec.CooldownPeriod != nil {
		k.cooldown = time.Duration(*so.Spec.CooldownPeriod) * time.Second
	}
	for _, t := range so.Spec.Triggers {
		for key, field := range map[string]*float64{"queueLength": &k.perReplica, "activationQueueLength": &k.activation} {
			if s, ok := t.Metadata[key]; ok {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || v < 0 {
					return nil, fmt.Errorf("ScaledObject %s: triggers metadata %s %q is not a non-negative number", so.Name, key, s)
				}
				*field = v
			}
		}
	}
	if k.perReplica <= 0 {
		return nil, fmt.Errorf("ScaledObject %s: queueLength must be positive", so.Name)
	}
	return k, nil
}

// Clamp is v within [lo, hi].
func Clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }
