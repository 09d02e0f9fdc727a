package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestAWSFlags: --cloud-provider aws takes its settings from flags or
// upstream's environment variables (a flag winning), and what it lacks or
// gets wrong is said before anything connects, naming the flag, the
// variable and where the value comes from.
func TestAWSFlags(t *testing.T) {
	parse := func(t *testing.T, env map[string]string, args ...string) (*cloudFlags, error) {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		var cloud cloudFlags
		var tun controllerTuning
		cmd := &cobra.Command{Use: "controller"}
		cloud.register(cmd)
		tun.addFlags(cmd.Flags())
		if err := cmd.Flags().Parse(args); err != nil {
			return nil, err
		}
		if err := tun.fromEnv(cmd.Flags()); err != nil {
			return nil, err
		}
		return &cloud, cloud.check()
	}
	t.Run("environment", func(t *testing.T) {
		cloud, err := parse(t, map[string]string{"CLUSTER_NAME": "production", "CLUSTER_ENDPOINT": "https://env.example", "INTERRUPTION_QUEUE": "production"},
			"--cloud-provider=aws", "--cluster-endpoint=https://flag.example")
		if err != nil {
			t.Fatal(err)
		}
		if a := cloud.aws; a.clusterName != "production" || a.clusterEndpoint != "https://flag.example" || a.interruptionQueue != "production" {
			t.Errorf("aws settings %+v: want the name and queue from the environment, the endpoint from the flag", a)
		}
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cloud-provider=aws"}, "--cloud-provider aws needs --cluster-name (or $CLUSTER_NAME) and --cluster-endpoint (or $CLUSTER_ENDPOINT"},
		{[]string{"--cloud-provider=aws", "--cluster-name=p"}, "needs --cluster-endpoint"},
		{[]string{"--cloud-provider=aws", "--cluster-name=p", "--cluster-endpoint=api.example"}, `--cluster-endpoint "api.example": the API server URL, https://`},
		{[]string{"--cloud-provider=aws", "--cluster-name=p", "--cluster-endpoint=https://a", "--cluster-ca-bundle=not base64!"}, "--cluster-ca-bundle: not base64"},
		{[]string{"--cloud-provider=aws", "--zones=us-east-1a"}, "--catalog and --zones are for kwok and sim"},
		{[]string{"--cloud-provider=aws", "--cluster-name=p", "--cluster-endpoint=https://a", "--cluster-cidr=10.100.0.0"}, `--cluster-cidr "10.100.0.0": a CIDR such as 10.100.0.0/16`},
		{[]string{"--cloud-provider=gce"}, "the providers are kwok, sim and aws"},
		{[]string{"--cloud-provider=sim", "--spot-interruptions-per-node-hour=-1"}, "--spot-interruptions-per-node-hour -1: use a rate of 0 or more"},
		{[]string{"--cloud-provider=kwok", "--spot-interruptions-per-node-hour=0.5"}, "--spot-interruptions-per-node-hour is for --cloud-provider sim"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if _, err := parse(t, nil, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: got %v, want an error with %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestNetworkOf: the service CIDR assumed from the kubernetes Service's IP
// is EKS's default size for its family.
func TestNetworkOf(t *testing.T) {
	for ip, want := range map[string]string{"10.100.0.1": "10.100.0.0/16", "172.20.0.1": "172.20.0.0/16", "fd12:3456:789a::1": "fd12:3456:789a::/108", "nope": ""} {
		got, err := networkOf(ip)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("networkOf(%q) = %q, %v; want %q", ip, got, err, want)
		}
	}
}
