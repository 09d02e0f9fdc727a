// Package interruption reads the interruption queue: the SQS queue the
// cluster's EventBridge rules send EC2 spot interruption warnings,
// rebalance recommendations, AWS Health scheduled changes and instance
// state changes to. Receive returns those as Messages; anything else is
// deleted at once. A Message stays in the queue until Delete, so a notice
// is not lost when its handler dies before acting: once the queue's
// visibility timeout passes, it is received again.
package interruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// SQSAPI is the part of *sqs.Client the queue calls.
type SQSAPI interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// Message is one interruption notice.
type Message struct {
	// ID is the EventBridge event's id (the SQS message ID when the event
	// has none); one event delivered twice has one ID.
	ID string
	// ReceiptHandle deletes the message (Delete).
	ReceiptHandle string
	Kind          cloudprovider.InterruptionKind
	// InstanceIDs: one for the EC2 events, those affected for a scheduled
	// change.
	InstanceIDs []string
}

// Receive's long poll: SQS's longest wait, and its most messages a call.
const (
	waitTimeSeconds = 20
	maxMessages     = 10
)

// Queue is the interruption queue. Safe for concurrent use.
type Queue struct {
	c     SQSAPI
	queue string

	mu  sync.Mutex
	url string
}

// New returns the queue named queue (resolved by GetQueueUrl on first
// use) or at the URL queue.
func New(c SQSAPI, queue string) *Queue {
	q := &Queue{c: c, queue: queue}
	if strings.HasPrefix(queue, "https://") || strings.HasPrefix(queue, "http://") {
		q.url = queue
	}
	return q
}

// Receive long-polls the queue (up to 20 s, up to 10 messages) and returns
// the interruption notices. Messages that are not one of the four events
// (or are malformed, or a state change to a state that is no
// interruption) are deleted at once and logged, never returned.
func (q *Queue) Receive(ctx context.Context) ([]Message, error) {
	url, err := q.queueURL(ctx)
	if err != nil {
		return nil, err
	}
	out, err := q.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(url),
		MaxNumberOfMessages: maxMessages,
		WaitTimeSeconds:     waitTimeSeconds,
	})
	if err != nil {
		return nil, fmt.Errorf("receiving from interruption queue %s: %w", q.queue, err)
	}
	logger := log.FromContext(ctx).WithValues("queue", q.queue)
	var msgs []Message
	for _, m := range out.Messages {
		id, kind, instances, perr := parse(aws.ToString(m.Body))
		if id == "" {
			id = aws.ToString(m.MessageId)
		}
		if perr == nil {
			msgs = append(msgs, Message{ID: id, ReceiptHandle: aws.ToString(m.ReceiptHandle), Kind: kind, InstanceIDs: instances})
			continue
		}
		logger.Info("deleting a message that is no interruption notice", "messageID", aws.ToString(m.MessageId), "id", id, "reason", perr.Error())
		if err := q.delete(ctx, url, aws.ToString(m.ReceiptHandle)); err != nil {
			// It comes back after the visibility timeout, and goes then.
			logger.Error(err, "deleting a message that is no interruption notice", "messageID", aws.ToString(m.MessageId))
		}
	}
	return msgs, nil
}

// Delete removes a handled message from the queue.
func (q *Queue) Delete(ctx context.Context, m Message) error {
	url, err := q.queueURL(ctx)
	if err != nil {
		return err
	}
	if err := q.delete(ctx, url, m.ReceiptHandle); err != nil {
		return fmt.Errorf("deleting interruption message %s (%s): %w", m.ID, m.Kind, err)
	}
	return nil
}

func (q *Queue) delete(ctx context.Context, url, receipt string) error {
	if receipt == "" {
		return errors.New("no receipt handle")
	}
	_, err := q.c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(receipt)})
	return err
}

// queueURL is the queue's URL, looked up by name once.
func (q *Queue) queueURL(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.url != "" {
		return q.url, nil
	}
	out, err := q.c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.queue)})
	if err != nil {
		return "", fmt.Errorf("looking up interruption queue %q: %w", q.queue, err)
	}
	if aws.ToString(out.QueueUrl) == "" {
		return "", fmt.Errorf("looking up interruption queue %q: GetQueueUrl returned no URL", q.queue)
	}
	q.url = *out.QueueUrl
	return q.url, nil
}
