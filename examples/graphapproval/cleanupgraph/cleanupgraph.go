// Package cleanupgraph is the graph of the seed's Graph example, shared by
// examples/graphapproval and `braid demo graph`: an inspector node, then a
// cleanup node that the seed's ApprovalHook stops for approval before it
// runs (a BeforeNodeCallEvent interrupt); any answer but "y" cancels the
// node, which then ends CANCELLED without running.
//
// The nodes' agents play a scripted conversation (no network, no API key)
// unless Config.Model names a real provider, and their tools act on a
// Cloud, a fake account of resources held in memory.
package cleanupgraph

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/tool"
)

// The graph's names, as the seed spells them.
const (
	// AppName namespaces the hook's interrupt.
	AppName = "myapp"
	// ApprovalName is the name of the interrupt raised before cleanup.
	ApprovalName = AppName + "-approval"
	// Inspector and Cleanup are the node ids.
	Inspector = "inspector"
	Cleanup   = "cleanup"
	// DenyMessage is the cancelled cleanup node's message.
	DenyMessage = "User denied permission to cleanup resources"
	// Task is the prompt the seed invokes the graph with.
	Task = "Inspect and clean up my resources"
	// MaxAgeDays: the resources older than this are cleaned up.
	MaxAgeDays = 5
)

// Reason is the reason of the approval interrupt: the resources the
// cleanup would delete.
type Reason struct {
	Resources []string `json:"resources"`
}

// Resource is one resource of the Cloud.
type Resource struct {
	Name    string `json:"name"`
	AgeDays int    `json:"ageDays"`
}

// Cloud is the fake account the tools act on. It is safe for concurrent
// use (nodes may run concurrently).
type Cloud struct {
	mu        sync.Mutex
	resources []Resource
	deleted   []string
}

// NewCloud returns an account of four resources, three of them older than
// MaxAgeDays.
func NewCloud() *Cloud {
	return &Cloud{resources: []Resource{
		{Name: "bucket-logs-2026-10", AgeDays: 31},
		{Name: "vm-build-17", AgeDays: 12},
		{Name: "disk-snapshot-4", AgeDays: 7},
		{Name: "vm-web-1", AgeDays: 1},
	}}
}

// Resources returns the resources that are left.
func (c *Cloud) Resources() []Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.resources)
}

// Old returns the names of the resources older than MaxAgeDays.
func (c *Cloud) Old() []string {
	var old []string
	for _, r := range c.Resources() {
		if r.AgeDays > MaxAgeDays {
			old = append(old, r.Name)
		}
	}
	return old
}

// Deleted returns the names of the resources deleted so far, in order.
func (c *Cloud) Deleted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.deleted)
}

func (c *Cloud) delete(names []string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var done []string
	for _, n := range names {
		i := slices.IndexFunc(c.resources, func(r Resource) bool { return r.Name == n })
		if i < 0 {
			return done, fmt.Errorf("no resource %q", n)
		}
		c.resources = slices.Delete(c.resources, i, i+1)
		c.deleted = append(c.deleted, n)
		done = append(done, n)
	}
	return done, nil
}

// ApprovalHook is the seed's ApprovalHook: before the cleanup node runs,
// it raises the interrupt AppName+"-approval" with the resources to clean
// up, and cancels the node unless the answer is "y".
type ApprovalHook struct {
	AppName string
	Cloud   *Cloud
}

// RegisterHooks implements hook.Provider.
func (h ApprovalHook) RegisterHooks(r *hook.Registry) { hook.Add(r, h.approve) }

func (h ApprovalHook) approve(_ context.Context, ev *multiagent.BeforeNodeCallEvent) error {
	if ev.NodeID != Cleanup {
		return nil
	}
	approval, err := ev.Interrupt(h.AppName+"-approval", Reason{Resources: h.Cloud.Old()})
	if err != nil {
		return err // the graph stops INTERRUPTED; cleanup has not run
	}
	if s, _ := approval.String(); strings.ToLower(s) != "y" {
		ev.CancelNode(DenyMessage)
	}
	return nil
}

// Config configures Build.
type Config struct {
	// Model is the --model spec; "" and "scripted" play the offline script.
	Model string
	// System is the actor system (nil: actors.Default()).
	System *actors.System
}

type namesInput struct {
	Names []string `json:"names" jsonschema:"the names of the resources to delete"`
}

// Build builds the graph inspector → cleanup over cloud, with the
// ApprovalHook; Close it when done.
func Build(ctx context.Context, cloud *Cloud, cfg Config) (*graph.Graph, error) {
	inspect := tool.New("inspect_resources", "List the resources of the account with their age in days",
		func(ctx context.Context, tc *tool.Context, _ struct{}) (map[string]any, error) {
			return map[string]any{"resources": cloud.Resources()}, nil
		})
	deleteResources := tool.New("delete_resources", "Delete the named resources",
		func(ctx context.Context, tc *tool.Context, in namesInput) (map[string]any, error) {
			done, err := cloud.delete(in.Names)
			if err != nil {
				return nil, err
			}
			return map[string]any{"deleted": done}, nil
		}, tool.AtMostOnce()) // deleting twice is not harmless
	inspector, err := provider.New(ctx, cfg.Model, scripted("inspect-1", "inspect_resources", struct{}{}, func(model.ToolResult) string {
		return fmt.Sprintf("Found %d resources older than %d days: %s.", len(cloud.Old()), MaxAgeDays, strings.Join(cloud.Old(), ", "))
	}))
	if err != nil {
		return nil, err
	}
	old := cloud.Old()
	cleaner, err := provider.New(ctx, cfg.Model, scripted("delete-1", "delete_resources", namesInput{Names: old}, func(r model.ToolResult) string {
		if r.Status == model.ToolError {
			return "I could not clean up: " + r.Text()
		}
		return fmt.Sprintf("Cleaned up %d resources older than %d days: %s.", len(old), MaxAgeDays, strings.Join(old, ", "))
	}))
	if err != nil {
		return nil, err
	}
	b := graph.NewBuilder().
		AddNode(Inspector, agentnode.Agent(agent.Config{Model: inspector, SystemPrompt: "You inspect resources.", Tools: []tool.Tool{inspect}})).
		AddNode(Cleanup, agentnode.Agent(agent.Config{Model: cleaner, SystemPrompt: "You clean up resources older than 5 days.", Tools: []tool.Tool{deleteResources}})).
		AddEdge(Inspector, Cleanup).
		SetEntryPoint(Inspector)
	return b.Build(ctx, graph.Config{Hooks: []hook.Provider{ApprovalHook{AppName: AppName, Cloud: cloud}}, System: cfg.System})
}

// scripted is a node's script: the prompt gets one tool call, its result
// gets summary(result).
func scripted(id, name string, input any, summary func(model.ToolResult) string) model.Model {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, ok := req.LastMessage()
		if !ok {
			return model.Turn{}, fmt.Errorf("empty conversation")
		}
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn(summary(rs[0])), nil
		}
		return model.ToolTurn(model.Call(id, name, input)), nil
	})
}
