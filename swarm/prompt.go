package swarm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/proto/braidv1"
)

// handoffFrom is the handoff a node run was reached by.
type handoffFrom struct{ node, message string }

// input is a node run's input: one user message whose first block is the
// swarm context as text, followed by the task's non-text blocks.
func (p *policy) input(v *actors.RunView, node string, from *handoffFrom) *braidv1.AgentInput {
	if task := v.Task(); task != p.task {
		p.task = task
		p.taskText, p.taskBlocks = splitTask(task)
	}
	msg := model.Message{Role: model.RoleUser, Content: []model.ContentBlock{model.Text(p.contextText(node, from))}}
	for _, b := range p.taskBlocks {
		msg.Content = append(msg.Content, b.Clone())
	}
	raw, err := json.Marshal(msg)
	if err != nil { // blocks read from JSON encode again: cannot happen
		raw, _ = json.Marshal(model.UserText(p.contextText(node, from)))
	}
	return &braidv1.AgentInput{Messages: [][]byte{raw}}
}

// contextText is what a node is told about the run: how it was reached,
// the user's request, who worked on it, what they shared, and whom it
// can hand off to.
func (p *policy) contextText(node string, from *handoffFrom) string {
	var b strings.Builder
	b.WriteString("Swarm context\n")
	if from != nil {
		fmt.Fprintf(&b, "Handoff message from %s: %s\n", from.node, from.message)
	}
	fmt.Fprintf(&b, "User request: %s\n", p.taskText)
	if len(p.st.History) > 0 {
		fmt.Fprintf(&b, "Agents that worked on this so far, in order: %s\n", strings.Join(p.st.History, " → "))
	}
	if len(p.st.Shared) > 0 {
		b.WriteString("Knowledge shared by earlier agents:\n")
		for _, e := range p.st.Shared {
			raw, err := json.Marshal(e.Values) // keys sorted
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "- %s: %s\n", e.Node, raw)
		}
	}
	var others []member
	for _, m := range p.team.members {
		if m.id != node {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		b.WriteString("You are the only agent of this swarm: your answer completes the task.")
		return b.String()
	}
	b.WriteString("Other agents of this swarm you can hand off to:\n")
	for _, m := range others {
		if m.description == "" {
			fmt.Fprintf(&b, "- %s\n", m.id)
			continue
		}
		fmt.Fprintf(&b, "- %s: %s\n", m.id, m.description)
	}
	fmt.Fprintf(&b, "If another agent should carry on, call %s with its name. If you answer without handing off, "+
		"your answer completes the task.", HandoffTool)
	return b.String()
}

// splitTask returns a task's text (its text blocks, one message a line)
// and its other blocks (images, documents), which are passed on as they
// are.
func splitTask(task *braidv1.AgentInput) (string, []model.ContentBlock) {
	var texts []string
	var blocks []model.ContentBlock
	for _, raw := range task.GetMessages() {
		var m model.Message
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		var line strings.Builder
		for _, c := range m.Content {
			switch {
			case c.Text != nil:
				line.WriteString(*c.Text)
			case c.Other != nil:
				blocks = append(blocks, c)
			}
		}
		if line.Len() > 0 {
			texts = append(texts, line.String())
		}
	}
	return strings.Join(texts, "\n"), blocks
}
