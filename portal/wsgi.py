import os

from django.core.wsgi import get_wsgi_application

from portal.datadir import ensure_data_dir

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
ensure_data_dir()
application = get_wsgi_application()
