"""Settings: every setting's default, parsed and validated once per crawler."""
