package main

import (
	"os"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/htmlreport"
	"github.com/joiner-autoscaler/joiner/pkg/replay"
)

func writeHTML(path string, a, b *report.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := htmlreport.Write(f, a, b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeBacktestHTML(path string, bt *replay.Backtest) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := htmlreport.WriteBacktest(f, bt); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
