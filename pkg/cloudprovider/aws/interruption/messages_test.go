package interruption

import (
	"reflect"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// Bodies in the shapes EventBridge delivers (AWS's documented examples,
// as upstream Karpenter's tests record them).
const (
	spotWarning = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-12-03T08:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}`
	rebalance   = `{"version":"0","id":"5d5555d5-dd55-5555-5555-5555dd55d55d","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","account":"123456789012","time":"2026-12-03T08:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0"}}`
	scheduled   = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-12-03T08:00:00Z","region":"us-east-1","resources":[],"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/EC2_INSTANCE_RETIREMENT_SCHEDULED/EC2_INSTANCE_RETIREMENT_SCHEDULED_ABC123","service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"Thu, 10 Dec 2026 09:00:00 GMT","endTime":"Thu, 10 Dec 2026 11:00:00 GMT","eventDescription":[{"language":"en_US","latestDescription":"EC2 has detected degradation of the underlying hardware"}],"affectedEntities":[{"entityValue":"i-0aaaaaaaaaaaaaaaa"},{"entityValue":"i-0bbbbbbbbbbbbbbbb"}]}}`
)

func stateChange(state string) string {
	return `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012","time":"2026-12-03T08:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abcd1234ef567890"],"detail":{"instance-id":"i-0abcd1234ef567890","state":"` + state + `"}}`
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		id        string
		kind      cloudprovider.InterruptionKind
		instances []string
		err       string // substring of the reason it is no interruption
	}{
		{"spot interruption warning", spotWarning, "1e5527d7-bb36-4607-3370-4164db56a40e", cloudprovider.SpotInterruption, []string{"i-0b662ef9931388ba0"}, ""},
		{"capacity reservation interruption warning", strings.Replace(spotWarning, "EC2 Spot Instance Interruption Warning", "EC2 Capacity Reservation Instance Interruption Warning", 1),
			"1e5527d7-bb36-4607-3370-4164db56a40e", cloudprovider.CapacityReservationInterrupted, []string{"i-0b662ef9931388ba0"}, ""},
		{"rebalance recommendation", rebalance, "5d5555d5-dd55-5555-5555-5555dd55d55d", cloudprovider.RebalanceRecommendation, []string{"i-0b662ef9931388ba0"}, ""},
		{"scheduled change", scheduled, "7bf73129-1428-4cd3-a780-95db273d1602", cloudprovider.ScheduledChange, []string{"i-0aaaaaaaaaaaaaaaa", "i-0bbbbbbbbbbbbbbbb"}, ""},
		{"stopping", stateChange("stopping"), "7bf73129-1428-4cd3-a780-95db273d1602", cloudprovider.InstanceStopping, []string{"i-0abcd1234ef567890"}, ""},
		{"stopped", stateChange("stopped"), "7bf73129-1428-4cd3-a780-95db273d1602", cloudprovider.InstanceStopping, []string{"i-0abcd1234ef567890"}, ""},
		{"shutting-down", stateChange("shutting-down"), "7bf73129-1428-4cd3-a780-95db273d1602", cloudprovider.InstanceTerminating, []string{"i-0abcd1234ef567890"}, ""},
		{"terminated", stateChange("terminated"), "7bf73129-1428-4cd3-a780-95db273d1602", cloudprovider.InstanceTerminating, []string{"i-0abcd1234ef567890"}, ""},
		{"running is no interruption", stateChange("running"), "7bf73129-1428-4cd3-a780-95db273d1602", "", nil, `state "running" is no interruption`},
		{"pending is no interruption", stateChange("pending"), "7bf73129-1428-4cd3-a780-95db273d1602", "", nil, `state "pending"`},
		{"health event of another service", strings.Replace(scheduled, `"service":"EC2"`, `"service":"RDS"`, 1), "7bf73129-1428-4cd3-a780-95db273d1602", "", nil, "no EC2 scheduled change"},
		{"health issue, not a scheduled change", strings.Replace(scheduled, `"scheduledChange"`, `"issue"`, 1), "7bf73129-1428-4cd3-a780-95db273d1602", "", nil, "no EC2 scheduled change"},
		{"scheduled change naming no instance", strings.Replace(strings.Replace(scheduled, "i-0aaaaaaaaaaaaaaaa", "vol-1", 1), "i-0bbbbbbbbbbbbbbbb", "", 1), "7bf73129-1428-4cd3-a780-95db273d1602", "", nil, "names no instance"},
		{"spot warning without instance", strings.Replace(spotWarning, `"instance-id":"i-0b662ef9931388ba0",`, "", 1), "1e5527d7-bb36-4607-3370-4164db56a40e", "", nil, "names no instance"},
		{"other detail type", strings.Replace(spotWarning, "EC2 Spot Instance Interruption Warning", "EC2 Spot Instance Request Fulfillment", 1), "1e5527d7-bb36-4607-3370-4164db56a40e", "", nil, "is no interruption"},
		{"right detail type, wrong source", strings.Replace(spotWarning, `"aws.ec2"`, `"my.app"`, 1), "1e5527d7-bb36-4607-3370-4164db56a40e", "", nil, "is no interruption"},
		{"detail of the wrong shape", strings.Replace(rebalance, `{"instance-id":"i-0b662ef9931388ba0"}`, `["i-0b662ef9931388ba0"]`, 1), "5d5555d5-dd55-5555-5555-5555dd55d55d", "", nil, "detail:"},
		{"unknown version", strings.Replace(spotWarning, `"version":"0"`, `"version":"7"`, 1), "1e5527d7-bb36-4607-3370-4164db56a40e", "", nil, "version"},
		{"not JSON", "hello", "", "", nil, "not an EventBridge event"},
		{"empty", "", "", "", nil, "not an EventBridge event"},
		{"an SQS test event", `{"Service":"Amazon S3","Event":"s3:TestEvent"}`, "", "", nil, "is no interruption"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, kind, instances, err := parse(tc.body)
			if id != tc.id || kind != tc.kind || !reflect.DeepEqual(instances, tc.instances) {
				t.Errorf("got id %q kind %q instances %q, want %q %q %q", id, kind, instances, tc.id, tc.kind, tc.instances)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one saying %q", err, tc.err)
			}
		})
	}
}
