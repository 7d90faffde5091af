package openai_test

import (
	"errors"
	"fmt"

	"github.com/braidhq/braid/model/openai"
)

// A Config starts from DefaultConfig; only the model id is required.
func ExampleConfig_Validate() {
	cfg := openai.DefaultConfig()
	fmt.Println(errors.Is(cfg.Validate(), openai.ErrNoModel))

	cfg.Model = "llama3.2"
	cfg.BaseURL = "127.0.0.1:11434/v1"
	fmt.Println(cfg.Validate())

	cfg.BaseURL = "http://127.0.0.1:11434/v1" // a local Ollama
	fmt.Println(cfg.Validate())
	// Output:
	// true
	// openai: invalid config: BaseURL "127.0.0.1:11434/v1" must be an absolute http or https URL such as "http://127.0.0.1:11434/v1"
	// <nil>
}

// The OpenAI API, with the key from OPENAI_API_KEY.
func ExampleNew() {
	cfg := openai.DefaultConfig()
	cfg.Model = "gpt-4o-mini"
	temperature := 0.2
	cfg.Temperature = &temperature
	cfg.MaxTokens = 1024
	m, err := openai.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = m // pass m as agent.Config.Model
}
