package fake

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDescribeCapacityReservations(t *testing.T) {
	f := standard(t)
	end := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	f.AddCapacityReservation(CapacityReservation{ID: "cr-web", InstanceType: "m5.large", Zone: "us-east-1a", Total: 3, Tags: map[string]string{"team": "web"}})
	f.AddCapacityReservation(CapacityReservation{ID: "cr-block", InstanceType: "m5.xlarge", Zone: "us-east-1b", Total: 2, ReservationType: "capacity-block", EndDate: end})
	f.AddCapacityReservation(CapacityReservation{ID: "cr-old", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, State: "expired", Tags: map[string]string{"team": "web"}})
	c := ec2Client(f)
	ctx := context.Background()
	out, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: []types.Filter{
		{Name: aws.String("state"), Values: []string{"active"}}, {Name: aws.String("tag:team"), Values: []string{"web"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CapacityReservations) != 1 {
		t.Fatalf("%d reservations, want cr-web alone (cr-old is expired)", len(out.CapacityReservations))
	}
	r := out.CapacityReservations[0]
	if aws.ToString(r.CapacityReservationId) != "cr-web" || aws.ToInt32(r.AvailableInstanceCount) != 3 || r.InstanceMatchCriteria != types.InstanceMatchCriteriaTargeted ||
		aws.ToString(r.OwnerId) != AccountID || r.ReservationType != types.CapacityReservationTypeDefault {
		t.Errorf("cr-web as described: %+v", r)
	}
	out, err = c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-block"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.CapacityReservations[0]; r.ReservationType != types.CapacityReservationTypeCapacityBlock || !aws.ToTime(r.EndDate).Equal(end) {
		t.Errorf("cr-block as described: type %s, end %v", r.ReservationType, r.EndDate)
	}
	if _, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-none"}}); apiCode(err) != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("unknown id: %v", err)
	}
}

func TestFleetLaunchesIntoTheTargetedReservation(t *testing.T) {
	f := standard(t)
	f.AddCapacityReservation(CapacityReservation{ID: "cr-web", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1})
	c := ec2Client(f)
	ctx := context.Background()
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("reserved"),
		LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String("ami-x"), CapacityReservationSpecification: &types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &types.CapacityReservationTarget{CapacityReservationId: aws.String("cr-web")}}}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.CreateFleet(ctx, fleetInput("reserved", "on-demand", 1, [2]string{"m5.large", subnetA}))
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("first launch: %v, %+v", err, out)
	}
	id := out.Instances[0].InstanceIds[0]
	if got := f.CapacityReservations()[0].Available; got != 0 {
		t.Errorf("after a launch %d free, want 0", got)
	}
	di, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	in := di.Reservations[0].Instances[0]
	if aws.ToString(in.CapacityReservationId) != "cr-web" || in.CapacityReservationSpecification.CapacityReservationPreference != types.CapacityReservationPreferenceCapacityReservationsOnly {
		t.Errorf("instance's reservation %q, preference %+v", aws.ToString(in.CapacityReservationId), in.CapacityReservationSpecification)
	}
	out, err = c.CreateFleet(ctx, fleetInput("reserved", "on-demand", 1, [2]string{"m5.large", subnetA}))
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("a launch into a full reservation: %v, %+v", err, out)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if got := f.CapacityReservations()[0].Available; got != 1 {
		t.Errorf("after the instance terminated %d free, want 1", got)
	}
}
