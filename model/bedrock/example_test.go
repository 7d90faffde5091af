package bedrock_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/bedrock"
	"github.com/braidhq/braid/model/modeltest"
)

// printT reports a replay's failures on the example's output.
type printT struct{}

func (printT) Errorf(format string, args ...any) { fmt.Printf("replay: "+format+"\n", args...) }

func Example() {
	// A local stand-in for Bedrock that replays testdata/text.
	exchanges, err := loadScenario("text")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := startReplay(printT{}, exchanges, "us.anthropic.claude-sonnet-4-20250514-v1:0")
	defer srv.Close()

	cfg := bedrock.DefaultConfig()
	cfg.Model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	cfg.Region = "us-east-1"
	cfg.BaseURL = srv.srv.URL // leave empty to call Bedrock
	// Leave nil to use the standard AWS chain (environment, profile, role).
	cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "example-secret", "")
	m, err := bedrock.New(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}

	msg, stop, err := model.Complete(context.Background(), m, &model.Request{
		SystemPrompt: "You are a test.",
		Messages:     []model.Message{model.UserText("What is the weather and the time in Paris?")},
		Tools:        modeltest.Tools().Specs(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(msg.Text())
	fmt.Println(stop.StopReason, stop.Usage.TotalTokens)
	// Output:
	// Hello from the model.
	// end_turn 18
}
