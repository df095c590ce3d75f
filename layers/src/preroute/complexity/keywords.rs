//! The complexity router's default keyword lists and tier models, copied from LiteLLM 1.100
//! (`router_strategy/complexity_router/config.py`), in LiteLLM's order: a dimension's signal
//! names its first three matches in this order.

/// Code keywords: one match scores 0.5, two or more 1.0 (`DEFAULT_CODE_KEYWORDS`).
pub const CODE_KEYWORDS: &[&str] = &[
    "function",
    "class",
    "def",
    "const",
    "let",
    "var",
    "import",
    "export",
    "return",
    "async",
    "await",
    "try",
    "catch",
    "exception",
    "error",
    "debug",
    "api",
    "endpoint",
    "request",
    "response",
    "database",
    "sql",
    "query",
    "schema",
    "algorithm",
    "implement",
    "refactor",
    "optimize",
    "python",
    "javascript",
    "typescript",
    "java",
    "rust",
    "golang",
    "react",
    "vue",
    "angular",
    "node",
    "docker",
    "kubernetes",
    "git",
    "commit",
    "merge",
    "branch",
    "pull request",
];

/// Reasoning markers: one match scores 0.7, two or more 1.0 (and may promote to REASONING) (`DEFAULT_REASONING_KEYWORDS`).
pub const REASONING_KEYWORDS: &[&str] = &[
    "step by step",
    "think through",
    "let's think",
    "reason through",
    "analyze this",
    "break down",
    "explain your reasoning",
    "show your work",
    "chain of thought",
    "think carefully",
    "consider all",
    "evaluate",
    "pros and cons",
    "compare and contrast",
    "weigh the options",
    "logical",
    "deduce",
    "infer",
    "conclude",
];

/// Technical terms: two matches score 0.5, four or more 1.0 (`DEFAULT_TECHNICAL_KEYWORDS`).
pub const TECHNICAL_KEYWORDS: &[&str] = &[
    "architecture",
    "distributed",
    "scalable",
    "microservice",
    "machine learning",
    "neural network",
    "deep learning",
    "encryption",
    "authentication",
    "authorization",
    "performance",
    "latency",
    "throughput",
    "benchmark",
    "concurrency",
    "parallel",
    "threading",
    "memory",
    "cpu",
    "gpu",
    "optimization",
    "protocol",
    "tcp",
    "http",
    "grpc",
    "websocket",
    "container",
    "orchestration",
];

/// Simple indicators: one match or more scores -1.0 (`DEFAULT_SIMPLE_KEYWORDS`).
pub const SIMPLE_KEYWORDS: &[&str] = &[
    "what is",
    "what's",
    "define",
    "definition of",
    "who is",
    "who was",
    "when did",
    "when was",
    "where is",
    "where was",
    "how many",
    "how much",
    "yes or no",
    "true or false",
    "simple",
    "brief",
    "short",
    "quick",
    "hello",
    "hi",
    "hey",
    "thanks",
    "thank you",
    "goodbye",
    "bye",
    "okay",
];

/// Escalation keywords, matched case-sensitively (`DEFAULT_ESCALATION_KEYWORDS`).
pub const ESCALATION_KEYWORDS: &[&str] = &["LITELLM ESCALATE"];

/// A coding agent's conversation-title calls, matched case-sensitively in the newest ask (`HOUSEKEEPING_ASK_SENTINELS`).
pub const HOUSEKEEPING_SENTINELS: &[&str] = &[
    "Write the title in the predominant language of the session",
    "You are coming up with a succinct title for a coding session",
];

/// The default tier models, SIMPLE to REASONING (`DEFAULT_TIER_MODELS`).
pub const DEFAULT_TIER_MODELS: [&str; 4] =
    ["gpt-4o-mini", "gpt-4o", "claude-sonnet-4-20250514", "claude-sonnet-4-20250514"];
