package sim

import (
	"math/rand"
	"testing"
	"time"
)

func TestBootModelDraw(t *testing.T) {
	tests := []struct {
		name  string
		model BootModel
		want  func(t *testing.T, b Boot)
		draws int // random numbers a draw takes
	}{
		{"defaults without spread", BootModel{}, func(t *testing.T, b Boot) {
			if b != (Boot{Launch: DefaultLaunchLatency, Registration: DefaultRegistrationLatency, Initialization: DefaultInitializationLatency}) {
				t.Errorf("got %+v", b)
			}
		}, 3},
		{"truncated at a second", BootModel{Launch: Latency{Mean: time.Second, Stddev: time.Hour}}, func(t *testing.T, b Boot) {
			if b.Launch < time.Second {
				t.Errorf("launch %s", b.Launch)
			}
		}, 3},
		{"always never registers", BootModel{NeverRegisterRate: 1}, func(t *testing.T, b Boot) {
			if !b.NeverRegisters {
				t.Error("registers")
			}
		}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(7))
			for range 50 {
				tt.want(t, tt.model.Draw(r))
			}
			// The draws are part of the model: a host with the same seed
			// must stay in step with the simulator.
			ref := rand.New(rand.NewSource(7))
			for range 50 {
				for i := range tt.draws {
					if i < 3 {
						ref.NormFloat64()
					} else {
						ref.Float64()
					}
				}
			}
			if a, b := r.Int63(), ref.Int63(); a != b {
				t.Errorf("the draw takes other random numbers than %d a boot", tt.draws)
			}
		})
	}
	b := Boot{Launch: time.Second, Registration: 2 * time.Second, Initialization: 3 * time.Second}
	if b.Registered() != 3*time.Second || b.Ready() != 6*time.Second {
		t.Errorf("Registered %s, Ready %s", b.Registered(), b.Ready())
	}
}
