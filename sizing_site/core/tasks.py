from celery import shared_task


# Idempotent by construction (no side effects), so a redelivery after a crash is harmless.
@shared_task(acks_late=True, name="core.ping")
def ping() -> str:
    return "pong"
