from django.apps import AppConfig


class JobclassesConfig(AppConfig):
    name = "jobclasses"
