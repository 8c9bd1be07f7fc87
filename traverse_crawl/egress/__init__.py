"""The egress guard: no request reaches a loopback, private or metadata address."""
