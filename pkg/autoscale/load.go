package autoscale

import (
	"bufio"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// Load is a load over time, as an offset from the run's start.
type Load struct {
	at func(time.Duration) float64
}

// At is the load d after the start.
func (l *Load) At(d time.Duration) float64 { return l.at(d) }

// ConstantLoad is a load of v at every time.
func ConstantLoad(v float64) *Load { return &Load{at: func(time.Duration) float64 { return v }} }

// NewLoad is the load a scenario's spec describes (a csv pattern's file
// read from fsys, relative to the scenario directory dir).
func NewLoad(l scenario.LoadSpec, fsys fs.FS, dir string) (*Load, error) {
	switch l.Pattern {
	case "constant":
		v := l.Value
		return &Load{at: func(time.Duration) float64 { return v }}, nil
	case "diurnal":
		base, peak, hour := l.Base, l.Peak, l.PeakHour
		return &Load{at: func(d time.Duration) float64 {
			// A cosine day: peak at PeakHour (UTC offset from start), trough 12 h later.
			h := math.Mod(d.Hours(), 24)
			return base + (peak-base)*(1+math.Cos(2*math.Pi*(h-hour)/24))/2
		}}, nil
	case "steps":
		steps := append([]scenario.Step(nil), l.Steps...)
		sort.SliceStable(steps, func(i, j int) bool { return steps[i].At.Duration < steps[j].At.Duration })
		return &Load{at: func(d time.Duration) float64 {
			v := 0.0
			for _, s := range steps {
				if s.At.Duration <= d {
					v = s.Value
				}
			}
			return v
		}}, nil
	case "csv":
		b, err := fs.ReadFile(fsys, path.Join(dir, l.CSV))
		if err != nil {
			return nil, fmt.Errorf("csv %q: %w (the path is relative to the scenario directory)", l.CSV, err)
		}
		var steps []scenario.Step
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			parts := strings.Split(text, ",")
			if len(parts) != 2 {
				return nil, fmt.Errorf("%s:%d: want offset,value (e.g. 1h30m,250)", l.CSV, line)
			}
			at, err1 := time.ParseDuration(strings.TrimSpace(parts[0]))
			v, err2 := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("%s:%d: want offset,value (e.g. 1h30m,250), got %q", l.CSV, line, text)
			}
			steps = append(steps, scenario.Step{At: durationOf(at), Value: v})
		}
		return NewLoad(scenario.LoadSpec{Pattern: "steps", Steps: steps}, fsys, dir)
	}
	return nil, fmt.Errorf("unknown load pattern %q", l.Pattern)
}

func durationOf(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
