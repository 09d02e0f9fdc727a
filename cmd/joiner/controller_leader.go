package main

import (
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
)

// leaderElection is where replicas' Lease lives and how it is timed, with
// kube-scheduler's and kube-controller-manager's flag names and
// controller-runtime's defaults.
type leaderElection struct {
	namespace                                 string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

func (l *leaderElection) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&l.namespace, "leader-elect-resource-namespace", "", "the namespace of the leader election Lease (default: the pod's, in-cluster)")
	f.DurationVar(&l.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"how long followers wait after the leader's last renewal before they take over (a killed leader's successor acts within about this)")
	f.DurationVar(&l.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it stops leading (less than the lease duration)")
	f.DurationVar(&l.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to acquire or renew the Lease")
}

// apply sets the manager's leader election options.
func (l *leaderElection) apply(o *ctrl.Options) {
	o.LeaderElectionNamespace = l.namespace
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &l.leaseDuration, &l.renewDeadline, &l.retryPeriod
}
