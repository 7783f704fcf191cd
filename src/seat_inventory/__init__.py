"""Event-driven ticket and seat inventory: SQS -> Lambda -> DynamoDB -> SNS."""
