from django.contrib import admin

from portal.resource_admin import ResourceAdmin

from .models import Gadget, Widget

admin.site.register(Widget, ResourceAdmin)
admin.site.register(Gadget, ResourceAdmin)
