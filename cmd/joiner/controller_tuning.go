package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"

	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/schedulerconfig"
)

// controllerTuning is what an operator tunes in `joiner controller`, by
// flag or, as upstream Karpenter's chart sets it, by environment variable.
type controllerTuning struct {
	logLevel            string
	batchIdle, batchMax time.Duration
	featureGates        string
	// kubeQPS and kubeBurst bound the controller's requests to the API
	// server (client-go's client-side limit), upstream's 200 and 300: at
	// client-go's own 5 and 10, a scale-out's events queued for seconds.
	kubeQPS   float32
	kubeBurst int
	// schedulerConfig is --scheduler-config, upstream's: the cluster's
	// kube-scheduler settings decisions follow, as a YAML or JSON document.
	schedulerConfig string
}

// tuningEnv maps each flag to the environment variable that sets it when
// the flag is not given.
var tuningEnv = []struct{ flag, env string }{
	{"log-level", "LOG_LEVEL"},
	{"batch-idle-duration", "BATCH_IDLE_DURATION"},
	{"batch-max-duration", "BATCH_MAX_DURATION"},
	{"feature-gates", "FEATURE_GATES"},
	{"cluster-name", "CLUSTER_NAME"},
	{"cluster-endpoint", "CLUSTER_ENDPOINT"},
	{"interruption-queue", "INTERRUPTION_QUEUE"},
	{"min-values-policy", "MIN_VALUES_POLICY"},
	{"kube-client-qps", "KUBE_CLIENT_QPS"},
	{"kube-client-burst", "KUBE_CLIENT_BURST"},
	{"enable-profiling", "ENABLE_PROFILING"},
	{"scheduler-config", "SCHEDULER_CONFIG"},
	{"ignore-dra-requests", "IGNORE_DRA_REQUESTS"},
}

// featureGates are the gates Joiner knows, with their defaults (upstream's).
var featureGates = map[string]bool{"SpotToSpotConsolidation": false, "NodeRepair": false, "NodeOverlay": false, "CapacityBuffer": false, "ReservedCapacity": true}

func (t *controllerTuning) addFlags(f *pflag.FlagSet) {
	f.StringVar(&t.logLevel, "log-level", "info", "debug, info or error")
	f.DurationVar(&t.batchIdle, "batch-idle-duration", controller.DefaultBatchIdle, "a provisioning batch closes this long after its last pending pod")
	f.DurationVar(&t.batchMax, "batch-max-duration", controller.DefaultBatchMax, "a provisioning batch closes this long after its first pending pod at the latest")
	f.StringVar(&t.featureGates, "feature-gates", "", "gates to turn on or off, as Name=true,Name=false (known: "+strings.Join(gateNames(), ", ")+")")
	f.Float32Var(&t.kubeQPS, "kube-client-qps", 200, "requests per second to the API server, at most (client-side; upstream's default)")
	f.IntVar(&t.kubeBurst, "kube-client-burst", 300, "requests to the API server at once above --kube-client-qps, at most (upstream's default)")
	f.StringVar(&t.schedulerConfig, "scheduler-config", "", "the cluster's kube-scheduler settings to follow, a YAML or JSON document: podTopologySpread.defaultConstraints apply to pods with no spread constraints of their own (upstream's flag; empty: none)")
}

// scheduler is --scheduler-config parsed, nil when empty; an error names
// the flag or the variable it came from.
func (t *controllerTuning) scheduler(f *pflag.FlagSet) (*schedulerconfig.Config, error) {
	source := "--scheduler-config"
	if !f.Changed("scheduler-config") && os.Getenv("SCHEDULER_CONFIG") != "" {
		source = "$SCHEDULER_CONFIG"
	}
	return schedulerconfig.Parse([]byte(t.schedulerConfig), source)
}

// fromEnv sets the flags not given on the command line from the
// environment; a value that does not parse names its variable.
func (t *controllerTuning) fromEnv(f *pflag.FlagSet) error {
	for _, e := range tuningEnv {
		v, ok := os.LookupEnv(e.env)
		if !ok || f.Changed(e.flag) {
			continue
		}
		if err := f.Set(e.flag, v); err != nil {
			return fmt.Errorf("$%s=%q (for --%s): %w", e.env, v, e.flag, err)
		}
	}
	if t.kubeQPS <= 0 || t.kubeBurst <= 0 {
		return fmt.Errorf("--kube-client-qps %g, --kube-client-burst %d: both must be positive (upstream: 200 and 300)", t.kubeQPS, t.kubeBurst)
	}
	if t.batchIdle <= 0 || t.batchMax <= 0 || t.batchIdle > t.batchMax {
		return fmt.Errorf("--batch-idle-duration %s, --batch-max-duration %s: both must be positive, and the idle window no longer than the maximum (upstream: 1s and 10s)", t.batchIdle, t.batchMax)
	}
	return nil
}

func (t *controllerTuning) zapLevel() (zapcore.Level, error) {
	switch t.logLevel {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("--log-level %q: the levels are debug, info and error", t.logLevel)
}

// spotToSpot parses the feature gates and says whether
// SpotToSpotConsolidation is on.
func (t *controllerTuning) spotToSpot() (bool, error) {
	gates, err := t.gates()
	return gates["SpotToSpotConsolidation"], err
}

// nodeRepair says whether the NodeRepair gate is on.
func (t *controllerTuning) nodeRepair() (bool, error) {
	gates, err := t.gates()
	return gates["NodeRepair"], err
}

// gate says whether the named gate is on.
func (t *controllerTuning) gate(name string) (bool, error) {
	gates, err := t.gates()
	return gates[name], err
}

// gates parses --feature-gates over the defaults.
func (t *controllerTuning) gates() (map[string]bool, error) {
	gates := map[string]bool{}
	for k, v := range featureGates {
		gates[k] = v
	}
	for _, kv := range strings.Split(t.featureGates, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, value, found := strings.Cut(kv, "=")
		on, err := strconv.ParseBool(value)
		if !found || err != nil {
			return nil, fmt.Errorf("--feature-gates %q: %q is not Name=true or Name=false", t.featureGates, kv)
		}
		if _, known := featureGates[name]; !known {
			return nil, fmt.Errorf("--feature-gates %q: Joiner has no gate %q (known: %s)", t.featureGates, name, strings.Join(gateNames(), ", "))
		}
		gates[name] = on
	}
	return gates, nil
}

func gateNames() []string {
	var names []string
	for k := range featureGates {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
