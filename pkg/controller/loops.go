package controller

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// every runs f every period until ctx ends, logging its errors, from the
// moment the gate opens.
func every(ctx context.Context, gate *syncGate, clk clock.WithTicker, period time.Duration, what string, f func(context.Context) error) error {
	if !gate.wait(ctx) {
		return nil
	}
	t := clk.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := f(ctx); err != nil {
				logError(ctx, err, what)
			}
		}
	}
}
