package aws

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
)

// reservedClass is the seeds' node class selecting the team's
// reservations by tag and a Capacity Block by id.
func reservedClass(t *testing.T) *awsv1.EC2NodeClass {
	nc := seedNodeClass(t)
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "web"}}, {ID: "cr-0block"}}
	return nc
}

func offeringOf(its []*cloudprovider.InstanceType, typ, id string) (*cloudprovider.InstanceType, *cloudprovider.Offering) {
	for _, it := range its {
		if it.Name != typ {
			continue
		}
		for _, o := range it.Offerings {
			if o.ReservationID() == id {
				return it, o
			}
		}
	}
	return nil, nil
}

func TestReservationsResolvedAndOffered(t *testing.T) {
	e := newEnvWith(t, envOptions{reservedCapacity: true}, reservedClass(t))
	end := e.clock.Now().Add(30 * time.Minute)
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0web", InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Tags: map[string]string{"team": "web"}})
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0data", InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Tags: map[string]string{"team": "data"}})
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0block", InstanceType: "p5.48xlarge", Zone: "us-east-1b", Total: 1, ReservationType: "capacity-block", EndDate: end})
	st, err := e.p.ResolveNodeClass(e.ctx, reservedClass(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.CapacityReservations) != 2 || st.CapacityReservations[0].ID != "cr-0block" || st.CapacityReservations[1].ID != "cr-0web" {
		t.Fatalf("status reservations %+v, want cr-0block and cr-0web", st.CapacityReservations)
	}
	if b := st.CapacityReservations[0]; b.State != reservationExpiring || b.ReservationType != "capacity-block" || !b.EndTime.Time.Equal(end) {
		t.Errorf("the Capacity Block ending in 30 minutes: %+v, want expiring", b)
	}
	its, err := e.p.GetInstanceTypes(e.ctx, nodePool("default"))
	if err != nil {
		t.Fatal(err)
	}
	it, o := offeringOf(its, "m5.large", "cr-0web")
	if o == nil || !o.Available || o.Reservation.Capacity != 2 || o.CapacityType != v1.CapacityTypeReserved || o.Price <= 0 || o.Price > 1e-6 {
		t.Fatalf("cr-0web's offering %+v, want reserved, 2 free, at on-demand/1e7", o)
	}
	if !it.Requirements.Get(v1.LabelCapacityType).Has(v1.CapacityTypeReserved) || !it.Requirements.Get(cloudprovider.ReservationIDLabel).Has("cr-0web") {
		t.Errorf("m5.large's requirements %s do not allow its reservation", it.Requirements)
	}
	if _, o := offeringOf(its, "m5.large", "cr-0data"); o != nil {
		t.Error("cr-0data is offered though no term selects it")
	}
	if _, o := offeringOf(its, "p5.48xlarge", "cr-0block"); o == nil || o.Available {
		t.Errorf("the expiring Capacity Block's offering %+v, want listed and unavailable", o)
	}
}

func TestCreateLaunchesIntoAReservationThenOnDemand(t *testing.T) {
	e := newEnvWith(t, envOptions{reservedCapacity: true}, reservedClass(t))
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0web", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Tags: map[string]string{"team": "web"}})
	reservedOrOD := req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved, v1.CapacityTypeOnDemand)
	m5 := req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large")
	got, err := e.p.Create(e.ctx, claim("general-1", "default", reservedOrOD, m5))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{v1.LabelCapacityType: v1.CapacityTypeReserved, cloudprovider.ReservationIDLabel: "cr-0web",
		cloudprovider.ReservationTypeLabel: "default", cloudprovider.ReservationInterruptibleLabel: "false", v1.LabelZone: "us-east-1a"} {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	fl := e.aws.Fleets()[0]
	if fl.TargetCapacityType != "on-demand" || len(fl.Overrides) != 1 || fl.Overrides[0].SubnetID != fake.StandardSubnetPrefix+"a" {
		t.Errorf("fleet %s with overrides %v: want on-demand, m5.large in the reservation's zone alone", fl.TargetCapacityType, overrideSet(fl))
	}
	var targeted, optedOut int
	for _, lt := range e.aws.LaunchTemplates() {
		switch {
		case lt.CapacityReservationID == "cr-0web" && lt.CapacityReservationPreference == "capacity-reservations-only":
			targeted++
		case lt.CapacityReservationPreference == "none":
			optedOut++
		}
	}
	if targeted != 1 {
		t.Errorf("%d launch templates target cr-0web, want 1", targeted)
	}
	if r := e.aws.CapacityReservations()[0]; r.Available != 0 {
		t.Errorf("the reservation has %d free after the launch", r.Available)
	}
	again, err := e.p.Get(e.ctx, got.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Labels[v1.LabelCapacityType] != v1.CapacityTypeReserved || again.Labels[cloudprovider.ReservationIDLabel] != "cr-0web" {
		t.Errorf("Get reads the instance back as %v", again.Labels)
	}
	// The reservation is full now: the next claim goes on-demand, out of
	// open reservations.
	next, err := e.p.Create(e.ctx, claim("general-2", "default", reservedOrOD, m5))
	if err != nil {
		t.Fatal(err)
	}
	if next.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand || next.Labels[cloudprovider.ReservationIDLabel] != "" {
		t.Errorf("second claim labelled %v, want on-demand without a reservation", next.Labels)
	}
	for _, lt := range e.aws.LaunchTemplates() {
		if lt.CapacityReservationID == "" && lt.CapacityReservationPreference != "none" {
			t.Errorf("launch template %s has preference %q: with the gate on, launches outside a reservation opt out of open ones", lt.Name, lt.CapacityReservationPreference)
		}
	}
	// Reserved alone and none free: insufficient capacity, not on-demand.
	if _, err := e.p.Create(e.ctx, claim("general-3", "default", req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved), m5)); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("a reserved-only claim with no reservation free: %v, want insufficient capacity", err)
	}
}

func TestReservationGateOff(t *testing.T) {
	e := newEnv(t, reservedClass(t))
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0web", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Tags: map[string]string{"team": "web"}})
	st, err := e.p.ResolveNodeClass(e.ctx, reservedClass(t))
	if err != nil || len(st.CapacityReservations) != 0 {
		t.Errorf("gate off: reservations %v (%v), want none resolved", st.CapacityReservations, err)
	}
	if _, err := e.p.Create(e.ctx, claim("general-1", "default", onDemand, req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large"))); err != nil {
		t.Fatal(err)
	}
	for _, lt := range e.aws.LaunchTemplates() {
		if lt.CapacityReservationPreference != "" {
			t.Errorf("gate off: launch template with preference %q", lt.CapacityReservationPreference)
		}
	}
}

func TestExpiringCapacityBlockInterruptsItsInstances(t *testing.T) {
	e := newEnvWith(t, envOptions{reservedCapacity: true}, reservedClass(t))
	end := e.clock.Now().Add(2 * time.Hour)
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0block", InstanceType: "m5.large", Zone: "us-east-1b", Total: 1, ReservationType: "capacity-block", EndDate: end})
	got, err := e.p.Create(e.ctx, claim("general-1", "default", req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved),
		req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[cloudprovider.ReservationTypeLabel] != "capacity-block" || e.aws.Fleets()[0].TargetCapacityType != "capacity-block" {
		t.Errorf("a Capacity Block launch: labels %v, fleet %s", got.Labels, e.aws.Fleets()[0].TargetCapacityType)
	}
	e.p.expireCapacityBlocks(e.ctx)
	if len(e.p.interruptions) != 0 {
		t.Fatal("an instance announced two hours before its block ends")
	}
	e.clock.Step(end.Sub(e.clock.Now()) - CapacityBlockExpiryLead)
	if _, err := e.p.ResolveNodeClass(e.ctx, reservedClass(t)); err != nil {
		t.Fatal(err)
	}
	e.p.expireCapacityBlocks(e.ctx)
	e.p.expireCapacityBlocks(e.ctx)
	if n := len(e.p.interruptions); n != 1 {
		t.Fatalf("%d notices 40 minutes before the end, want 1 (once)", n)
	}
	if n := <-e.p.interruptions; n.Kind != cloudprovider.CapacityBlockExpiring || n.ProviderID != got.Status.ProviderID {
		t.Errorf("notice %+v, want CapacityBlockExpiring for %s", n, got.Status.ProviderID)
	}
}

// TestReservationInterruptionWarning: the owner of an interruptible
// reservation takes it back — its instance is interrupted and the
// reservation offered no more.
func TestReservationInterruptionWarning(t *testing.T) {
	e := newEnvWith(t, envOptions{queue: "production", reservedCapacity: true}, reservedClass(t))
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0int", InstanceType: "m5.large", Zone: "us-east-1a", Total: 3, Interruptible: true, Tags: map[string]string{"team": "web"}})
	launched, err := e.p.Create(e.ctx, claim("c1", "default", req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved),
		req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if launched.Labels[cloudprovider.ReservationInterruptibleLabel] != "true" || e.aws.Fleets()[0].TargetCapacityType != "reserved-capacity" {
		t.Errorf("an interruptible reservation's launch: labels %v, fleet %s", launched.Labels, e.aws.Fleets()[0].TargetCapacityType)
	}
	url := e.aws.CreateQueue("production")
	e.aws.SendMessage(url, strings.Replace(spotWarning("evt-1", e.aws.Instances()[0].ID), "EC2 Spot Instance Interruption Warning", "EC2 Capacity Reservation Instance Interruption Warning", 1))
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := e.p.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	got := <-e.p.Interruptions()
	if got.ProviderID != launched.Status.ProviderID || got.Kind != cloudprovider.CapacityReservationInterrupted {
		t.Fatalf("interruption %+v, want CapacityReservationInterrupted of %s", got, launched.Status.ProviderID)
	}
	its, err := e.p.GetInstanceTypes(e.ctx, nodePool("default"))
	if err != nil {
		t.Fatal(err)
	}
	if _, o := offeringOf(its, "m5.large", "cr-0int"); o == nil || o.Available {
		t.Errorf("the reclaimed reservation's offering %+v, want unavailable though EC2 said 2 free", o)
	}
}

// TestReservationDrift: a node whose reservation its class no longer
// selects has drifted; one whose reservation is still selected has not.
func TestReservationDrift(t *testing.T) {
	e := newEnvWith(t, envOptions{reservedCapacity: true}, reservedClass(t))
	e.aws.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0web", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Tags: map[string]string{"team": "web"}})
	got, err := e.p.Create(e.ctx, claim("c1", "default", req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved),
		req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if reason, err := e.p.IsDrifted(e.ctx, got); err != nil || reason != "" {
		t.Fatalf("drift %q (%v) at once", reason, err)
	}
	// The class's terms change: the instance's reservation is no longer
	// among those selected.
	var nc awsv1.EC2NodeClass
	if err := e.kube.Get(e.ctx, client.ObjectKey{Name: "default"}, &nc); err != nil {
		t.Fatal(err)
	}
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0other"}}
	if err := e.kube.Update(e.ctx, &nc); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(resolveTTL + time.Second)
	if reason, err := e.p.IsDrifted(e.ctx, got); err != nil || reason != DriftCapacityReservation {
		t.Errorf("after the class stopped selecting its reservation: drift %q (%v), want %s", reason, err, DriftCapacityReservation)
	}
	// A reservation that ends moves its instance out: on-demand, no drift
	// (the controller demotes the claim instead).
	e.aws.SetCapacityReservationState("cr-0web", "cancelled")
	if reason, err := e.p.IsDrifted(e.ctx, got); err != nil || reason != "" {
		t.Errorf("an instance moved out of its cancelled reservation: drift %q (%v), want none", reason, err)
	}
}
