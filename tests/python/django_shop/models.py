from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100, unique=True)
    born = models.DateField(null=True)

    class Meta:
        app_label = "django_shop"


class Book(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="books")
    title = models.CharField(max_length=200, db_index=True)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    published = models.DateTimeField()
    pages = models.IntegerField(default=0)

    class Meta:
        app_label = "django_shop"
