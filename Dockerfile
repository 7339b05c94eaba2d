# Image for compose.yaml: the runtime set only (requirements-runtime.lock, the pins of
# requirements.lock without the test, lint and type tools), as `make serve` installs it.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
# msgfmt for the translations; nothing else is compiled (psycopg ships binary wheels).
RUN apt-get update && apt-get install -y --no-install-recommends gettext \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements-runtime.lock pyproject.toml ./
RUN pip install -r requirements-runtime.lock
COPY . .
# Static files and translations are built into the image, so containers start with them.
# The key is a throw-away: settings refuse DEBUG=False without one, nothing is signed here.
RUN python manage.py compilemessages --ignore=.venv --verbosity 0 \
    && DEBUG=False SECRET_KEY=build-only ALLOWED_HOSTS=build \
       python manage.py collectstatic --noinput --verbosity 0
RUN useradd --system --uid 10001 rightsize && chown -R rightsize /app/var
USER rightsize
EXPOSE 8000
CMD ["gunicorn", "-c", "gunicorn.conf.py", "sizing_site.wsgi"]
