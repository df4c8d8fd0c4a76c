from django.urls import path

from im_app import views
from im_app.platforms.registry import PLATFORMS

urlpatterns = [
    *(pattern for platform in PLATFORMS.values() for pattern in platform.urls),
    path("im/link/<str:code>/", views.link_account, name="im-link"),
]
