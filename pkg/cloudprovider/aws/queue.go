package aws

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/interruption"
)

// queueMessage is an interruption notice as the queue reads it.
type queueMessage = interruption.Message

// newQueue reads the interruption queue (a name or a URL).
func newQueue(cfg aws.Config, queue string) messageQueue {
	return interruption.New(sqs.NewFromConfig(cfg), queue)
}
