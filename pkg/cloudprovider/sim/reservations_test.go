package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

func reservationFixture(t *testing.T, rs ...Reservation) *fixture {
	return newFixture(t, Options{Reservations: rs, ReservationTerms: map[string][]awsv1.CapacityReservationSelectorTerm{
		"default": {{Tags: map[string]string{"team": "web"}}, {ID: "cr-block"}}}})
}

func reservedOffering(t *testing.T, c *Provider, typ, id string) *cloudprovider.Offering {
	t.Helper()
	for _, it := range c.InstanceTypes()["general"] {
		if it.Name != typ {
			continue
		}
		for _, o := range it.Offerings {
			if o.ReservationID() == id {
				return o
			}
		}
	}
	return nil
}

func reservedIn(ids ...string) []*scheduling.Requirement {
	return []*scheduling.Requirement{
		scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved),
		scheduling.NewRequirement(cloudprovider.ReservationIDLabel, corev1.NodeSelectorOpIn, ids...),
	}
}

func TestReservationsTheNodeClassSelectsAreOffered(t *testing.T) {
	f := reservationFixture(t,
		Reservation{ID: "cr-web", InstanceType: "large", Zone: "a", Count: 2, Tags: map[string]string{"team": "web"}, OwnerID: "123456789012", InstanceMatchCriteria: "targeted"},
		Reservation{ID: "cr-data", InstanceType: "large", Zone: "a", Count: 5, Tags: map[string]string{"team": "data"}},
		Reservation{ID: "cr-block", InstanceType: "small", Zone: "b", Count: 1, Type: cloudprovider.ReservationTypeCapacityBlock})
	o := reservedOffering(t, f.cloud, "large", "cr-web")
	if o == nil || !o.Available || o.Reservation.Capacity != 2 || o.CapacityType != v1.CapacityTypeReserved || o.Price != 0.4/10_000_000 {
		t.Fatalf("cr-web's offering = %+v, want reserved, 2 left, at on-demand/1e7", o)
	}
	if reservedOffering(t, f.cloud, "large", "cr-data") != nil {
		t.Error("cr-data is offered though no term selects it")
	}
	if reservedOffering(t, f.cloud, "small", "cr-block") == nil {
		t.Error("cr-block is not offered though a term selects it by id")
	}
	for _, it := range f.cloud.InstanceTypes()["general"] {
		if it.Name == "large" {
			if !it.Requirements.Get(v1.LabelCapacityType).Has(v1.CapacityTypeReserved) || !it.Requirements.Get(cloudprovider.ReservationIDLabel).Has("cr-web") {
				t.Errorf("large's requirements %s do not allow its reservation", it.Requirements)
			}
		}
	}
}

func TestLaunchingIntoAReservationCountsItDownAndLabelsTheNode(t *testing.T) {
	f := reservationFixture(t, Reservation{ID: "cr-web", InstanceType: "large", Zone: "a", Count: 1, Tags: map[string]string{"team": "web"}})
	v0 := f.cloud.Version()
	nc, err := f.cloud.Create(context.Background(), claim(reservedIn("cr-web")...))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{v1.LabelCapacityType: v1.CapacityTypeReserved, cloudprovider.ReservationIDLabel: "cr-web",
		cloudprovider.ReservationTypeLabel: "default", cloudprovider.ReservationInterruptibleLabel: "false", v1.LabelInstanceType: "large", v1.LabelZone: "a"}
	for k, v := range want {
		if nc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, nc.Labels[k], v)
		}
	}
	if o := reservedOffering(t, f.cloud, "large", "cr-web"); o.Available || o.Reservation.Capacity != 0 {
		t.Errorf("after the launch the offering is %+v, want none left and unavailable", o)
	}
	if f.cloud.Version() == v0 {
		t.Error("the version did not change: callers would plan on the old count")
	}
	if _, err := f.cloud.Create(context.Background(), claim(reservedIn("cr-web")...)); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("a second launch into a full reservation: %v, want insufficient capacity", err)
	}
	if err := f.cloud.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if o := reservedOffering(t, f.cloud, "large", "cr-web"); !o.Available || o.Reservation.Capacity != 1 {
		t.Errorf("after the delete the offering is %+v, want one left again", o)
	}
}

func TestOnDemandLaunchCarriesNoReservationLabel(t *testing.T) {
	f := reservationFixture(t, Reservation{ID: "cr-web", InstanceType: "large", Zone: "a", Count: 1, Tags: map[string]string{"team": "web"}})
	nc, err := f.cloud.Create(context.Background(), claim(append(onDemandIn("a"), scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "large"))...))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nc.Labels[cloudprovider.ReservationIDLabel]; ok || nc.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand {
		t.Errorf("labels %v: an on-demand node with a reservation label", nc.Labels)
	}
}

func TestCapacityBlockExpiryAndReservationEnd(t *testing.T) {
	f := reservationFixture(t,
		Reservation{ID: "cr-block", InstanceType: "small", Zone: "b", Count: 2, Type: cloudprovider.ReservationTypeCapacityBlock},
		Reservation{ID: "cr-web", InstanceType: "large", Zone: "a", Count: 2, Tags: map[string]string{"team": "web"}})
	block, err := f.cloud.Create(context.Background(), claim(reservedIn("cr-block")...))
	if err != nil {
		t.Fatal(err)
	}
	odcr, err := f.cloud.Create(context.Background(), claim(reservedIn("cr-web")...))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.cloud.ExpireReservation("cr-block"); !slices.Equal(got, []string{block.Status.ProviderID}) {
		t.Errorf("expiring cr-block names %v, want its instance %s", got, block.Status.ProviderID)
	}
	if o := reservedOffering(t, f.cloud, "small", "cr-block"); o.Available {
		t.Error("an expiring Capacity Block is still offered")
	}
	if got := f.cloud.EndReservation("cr-web"); !slices.Equal(got, []string{odcr.Status.ProviderID}) {
		t.Errorf("ending cr-web names %v, want its instance", got)
	}
	in := f.cloud.Instance(odcr.Status.ProviderID)
	if in.Offering.CapacityType != v1.CapacityTypeOnDemand || in.Offering.Price != 0.4 || in.NodeClaim.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand {
		t.Errorf("after the ODCR ended its instance runs as %s at %v, labelled %v; want on-demand at 0.4", in.Offering.CapacityType, in.Offering.Price, in.NodeClaim.Labels)
	}
	if _, ok := in.NodeClaim.Labels[cloudprovider.ReservationIDLabel]; ok {
		t.Error("a demoted node keeps its reservation label")
	}
}

func TestBadReservations(t *testing.T) {
	for _, tc := range []struct {
		r    Reservation
		want string
	}{
		{Reservation{ID: "cr-x", InstanceType: "huge", Zone: "a", Count: 1}, `instance type "huge" is not in the catalog`},
		{Reservation{ID: "cr-x", InstanceType: "large", Zone: "z", Count: 1}, `not offered in zone "z"`},
	} {
		_, err := New(nil, []*cloudprovider.InstanceType{instanceType("large", 8, 0.4)}, nil, Options{Now: func() time.Time { return start }, Reservations: []Reservation{tc.r}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
}
