package sim

import (
	"math/rand"
	"time"
)

// The simulated EC2's boot times when a scenario does not say: from the
// launch call to a running instance, from running to a registered Node,
// and from registered to Ready.
const (
	DefaultLaunchLatency         = 20 * time.Second
	DefaultRegistrationLatency   = 30 * time.Second
	DefaultInitializationLatency = 10 * time.Second
)

// Latency is a normal distribution of durations, truncated at one second.
// A zero Mean takes the default it is drawn with.
type Latency struct {
	Mean, Stddev time.Duration
}

// Draw is one duration of the distribution (def when Mean is 0).
func (l Latency) Draw(r *rand.Rand, def time.Duration) time.Duration {
	mean := l.Mean
	if mean == 0 {
		mean = def
	}
	d := time.Duration(float64(mean) + r.NormFloat64()*float64(l.Stddev))
	return max(d, time.Second)
}

// BootModel is how an instance comes up: the latencies of each step and
// the share of instances whose Node never registers. The simulator and the
// controller's sim provider both draw from it, so they model one cloud.
type BootModel struct {
	Launch, Registration, Initialization Latency
	NeverRegisterRate                    float64
}

// Boot is one instance's way up, drawn from a BootModel.
type Boot struct {
	// Launch: the launch call to a running instance; Registration: running
	// to a registered Node; Initialization: registered to Ready.
	Launch, Registration, Initialization time.Duration
	// NeverRegisters: the instance runs, but its Node never appears.
	NeverRegisters bool
}

// Registered is how long after the launch call the Node registers.
func (b Boot) Registered() time.Duration { return b.Launch + b.Registration }

// Ready is how long after the launch call the Node is Ready.
func (b Boot) Ready() time.Duration { return b.Launch + b.Registration + b.Initialization }

// Draw draws one instance's boot from r: the three latencies in order,
// then, when the model has a never-register rate, whether it never does.
// The order of the draws is part of the model: a run with the same seed
// draws the same boots.
func (m BootModel) Draw(r *rand.Rand) Boot {
	b := Boot{
		Launch:         m.Launch.Draw(r, DefaultLaunchLatency),
		Registration:   m.Registration.Draw(r, DefaultRegistrationLatency),
		Initialization: m.Initialization.Draw(r, DefaultInitializationLatency),
	}
	b.NeverRegisters = m.NeverRegisterRate > 0 && r.Float64() < m.NeverRegisterRate
	return b
}

// CapacityWindow is a time, relative to the start of a run, when an
// instance type's offerings (in a zone and capacity type, "" for all) have
// no capacity.
type CapacityWindow struct {
	InstanceType, Zone, CapacityType string
	From, To                         time.Duration
}

// InterruptionNotice is how long EC2 gives a spot instance between its
// interruption notice and reclaiming it.
const InterruptionNotice = 2 * time.Minute

// SpotInterruption draws how long after its launch a spot instance gets its
// interruption notice, at ratePerHour notices per instance-hour (a Poisson
// process: exponential waits). The simulator and the controller's sim
// provider both draw from it.
func SpotInterruption(rng *rand.Rand, ratePerHour float64) time.Duration {
	return time.Duration(rng.ExpFloat64() / ratePerHour * float64(time.Hour))
}
