"""manage.py export-crds: the CustomResourceDefinitions of every kind this portal defines."""

import yaml
from django.core.management.base import BaseCommand

from portal.machinery.openapi.crds import custom_resource_definitions


class Command(BaseCommand):
    help = "Print the CustomResourceDefinitions (YAML) of the kinds the portal defines."

    def handle(self, *args, **options):
        self.stdout.write(
            yaml.safe_dump_all(custom_resource_definitions(), sort_keys=False), ending=""
        )
