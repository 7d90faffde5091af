// Package provider turns a model spec — the value of the command's and the
// examples' --model flag — into a model.Model: "scripted" (the default: the
// program's own offline script), "openai:<model>", "anthropic:<model>" or
// "bedrock:<model>". It imports every provider, so only programs that want
// the choice at run time import it; a program that knows its provider
// imports that provider's package alone.
package provider
