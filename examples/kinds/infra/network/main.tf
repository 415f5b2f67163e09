# A placeholder module for the example configuration.
variable "region" { type = string }
variable "cidr" { type = string }
variable "tags" { type = map(string) }

output "vpc_id" { value = "vpc-example" }
